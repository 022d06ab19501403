// The review page shows the post's time in the reader's own zone: the browser's, unless one was chosen.
(function () {
  const time = document.getElementById("review-time");
  if (!time || time.dataset.zone) return;
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  const instant = new Date(time.getAttribute("datetime"));
  const text = new Intl.DateTimeFormat(undefined, {
    weekday: "long", day: "2-digit", month: "long", year: "numeric", hour: "2-digit", minute: "2-digit",
    hour12: false, timeZone: zone,
  }).format(instant);
  time.textContent = text + " (" + zone + ")";
  const field = document.getElementById("zone");
  if (field && !field.value) field.placeholder = zone;
})();
