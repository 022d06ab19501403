// Tickwork's only script besides htmx: say so when a request never reached the server.
// Answers the server gives (even 4xx/5xx) are swapped as htmx 4 does by default; the server
// shapes them: a refused row comes back as the row with its message, anything else is
// retargeted to #messages (see docs/dashboard.md).
document.addEventListener("htmx:error", function (event) {
  var messages = document.getElementById("messages");
  if (!messages) return;
  var note = document.createElement("p");
  note.className = "message error";
  note.setAttribute("role", "alert");
  note.textContent = "Tickwork could not be reached; check your connection and try again.";
  messages.replaceChildren(note);
});
