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

// The calendar: drag a post's chip to another day (month) or time slot (week). The browser's own
// drag events; the drop submits the calendar's hidden #drop-form, which htmx posts, and the server
// answers with the calendar re-rendered and the outcome (or the refusal) written on it. While a
// chip is dragged, #drop-preview shows where it would land and any DST note, asked of the server.
// Every drag has a keyboard equivalent: the "Move to…" control beside each post.
(function () {
  var dragged = null;
  var lastSpot = null;
  var lastCell = null;

  function say(text) {
    var area = document.getElementById("calendar-notice");
    if (!area) return;
    var note = document.createElement("p");
    note.className = "message info";
    note.setAttribute("role", "status");
    note.textContent = text;
    area.replaceChildren(note);
  }

  function dropCell(event) {
    return event.target.closest ? event.target.closest("[data-drop-date]") : null;
  }

  function landing(cell, event) {
    var time = dragged.time;
    // A free posting time is a drop target of its own: the post lands on exactly that time.
    var posting = cell.getAttribute("data-drop-slot");
    if (posting) return { date: cell.getAttribute("data-drop-date"), time: posting };
    var slot = cell.getAttribute("data-drop-time");
    if (slot) {
      // A week slot is an hour; where the pointer is in it picks the quarter.
      var box = cell.getBoundingClientRect();
      var quarter = Math.floor(((event.clientY - box.top) / Math.max(box.height, 1)) * 4);
      time = slot.slice(0, 3) + ["00", "15", "30", "45"][Math.min(3, Math.max(0, quarter))];
    }
    return { date: cell.getAttribute("data-drop-date"), time: time };
  }

  function finish() {
    if (lastCell) lastCell.classList.remove("drop-here");
    document.querySelectorAll(".chip.dragging").forEach(function (chip) { chip.classList.remove("dragging"); });
    var preview = document.getElementById("drop-preview");
    if (preview) { preview.hidden = true; preview.replaceChildren(); }
    dragged = null; lastSpot = null; lastCell = null;
  }

  document.addEventListener("dragstart", function (event) {
    var chip = event.target.closest ? event.target.closest("[data-move-post], [data-unmovable]") : null;
    if (!chip) return;
    if (chip.hasAttribute("data-unmovable")) {
      event.preventDefault();
      say(chip.getAttribute("data-unmovable"));
      return;
    }
    dragged = { post: chip.getAttribute("data-move-post"), date: chip.getAttribute("data-wall-date"),
                time: chip.getAttribute("data-wall-time") };
    event.dataTransfer.effectAllowed = "move";
    event.dataTransfer.setData("text/plain", "post #" + dragged.post);
    document.querySelectorAll('[data-move-post="' + dragged.post + '"]').forEach(function (same) {
      same.classList.add("dragging");
    });
  });

  document.addEventListener("dragover", function (event) {
    if (!dragged) return;
    var cell = dropCell(event);
    if (!cell) return;
    event.preventDefault();
    event.dataTransfer.dropEffect = "move";
    var spot = landing(cell, event);
    var key = spot.date + "T" + spot.time;
    if (key === lastSpot) return;
    lastSpot = key;
    if (lastCell) lastCell.classList.remove("drop-here");
    cell.classList.add("drop-here");
    lastCell = cell;
    var form = document.getElementById("drop-form");
    var preview = document.getElementById("drop-preview");
    if (!form || !preview || !window.htmx) return;
    preview.hidden = false;
    var url = form.getAttribute("data-preview-url") + "?" + new URLSearchParams(
      { post: dragged.post, date: spot.date, time: spot.time }).toString();
    htmx.ajax("GET", url, { target: "#drop-preview", swap: "innerHTML" });
  });

  document.addEventListener("drop", function (event) {
    if (!dragged) return;
    var cell = dropCell(event);
    if (!cell) return;
    event.preventDefault();
    var spot = landing(cell, event);
    var form = document.getElementById("drop-form");
    var same = spot.date === dragged.date && spot.time === dragged.time;
    if (form && !same) {
      form.elements.post.value = dragged.post;
      form.elements.date.value = spot.date;
      form.elements.time.value = spot.time;
    }
    finish();
    if (form && !same) form.requestSubmit();
  });

  document.addEventListener("dragend", finish);

  // After the calendar re-renders with an outcome, focus moves to it (so a screen reader reads it),
  // and its Undo is offered for a few seconds only.
  function settle() {
    var focus = document.querySelector("[data-focus-after-swap]");
    if (focus) { focus.removeAttribute("data-focus-after-swap"); focus.focus(); }
    document.querySelectorAll("form.undo[data-undo-seconds]").forEach(function (undo) {
      var seconds = parseFloat(undo.getAttribute("data-undo-seconds")) || 10;
      undo.removeAttribute("data-undo-seconds");
      setTimeout(function () { undo.remove(); }, seconds * 1000);
    });
  }
  document.addEventListener("htmx:after:settle", settle);
  document.addEventListener("DOMContentLoaded", settle);
})();

// A select that follows another (the rule builder's action type follows its channel): only the
// options whose data-channels name the chosen value stay enabled; the server refuses the rest anyway.
(function () {
  function follow(select) {
    var leader = document.getElementById(select.dataset.follows);
    if (!leader) { return; }
    var chosen = leader.value, first = null;
    Array.prototype.forEach.call(select.options, function (option) {
      var allowed = !option.dataset.channels || option.dataset.channels.split(" ").indexOf(chosen) >= 0;
      option.disabled = !allowed;
      option.hidden = !allowed;
      if (allowed && first === null) { first = option; }
    });
    if (select.selectedOptions.length && select.selectedOptions[0].disabled && first) { first.selected = true; }
  }
  function followAll() { document.querySelectorAll("select[data-follows]").forEach(follow); }
  document.addEventListener("change", function (event) {
    document.querySelectorAll('select[data-follows="' + event.target.id + '"]').forEach(follow);
  });
  document.addEventListener("DOMContentLoaded", followAll);
  document.addEventListener("htmx:after:settle", followAll);
})();

// The media page: files dropped anywhere on its upload form go into its file field and are sent.
// Without this script the field still takes files the ordinary way.
(function () {
  document.addEventListener("dragover", function (event) {
    var zone = event.target.closest ? event.target.closest("[data-drop-files]") : null;
    if (!zone) return;
    event.preventDefault();
    zone.classList.add("dragging");
  });
  document.addEventListener("dragleave", function (event) {
    var zone = event.target.closest ? event.target.closest("[data-drop-files]") : null;
    if (zone) zone.classList.remove("dragging");
  });
  document.addEventListener("drop", function (event) {
    var zone = event.target.closest ? event.target.closest("[data-drop-files]") : null;
    if (!zone || !event.dataTransfer || !event.dataTransfer.files.length) return;
    event.preventDefault();
    zone.classList.remove("dragging");
    var field = zone.querySelector("input[type=file]");
    field.files = event.dataTransfer.files;
    zone.requestSubmit();
  });
})();

// A row that replaces itself (Cancel, Retry, Reschedule) keeps the keyboard's place: the focus was
// inside the old row, so it goes to the new one (its first control, else the row itself), never
// back to the page's body.
(function () {
  var focusedRow = null;
  document.addEventListener("htmx:before:swap", function () {
    var active = document.activeElement;
    var row = active && active.closest ? active.closest("tr[id^='action-']") : null;
    focusedRow = row ? row.id : null;
  });
  document.addEventListener("htmx:after:swap", function () {
    if (!focusedRow) { return; }
    var id = focusedRow;
    focusedRow = null;
    var active = document.activeElement;
    if (active && active !== document.body && active.isConnected) { return; }
    var row = document.getElementById(id);
    if (!row) { return; }
    var control = row.querySelector("td.row-actions button, td.row-actions a, td.row-actions input");
    if (control) { control.focus(); return; }
    row.setAttribute("tabindex", "-1");
    row.focus();
  });
})();

// Tabs (the composer's one per network): a click, or the arrow keys, show one panel and hide the
// others; the chosen tab is kept in the hidden input the tablist names (data-tabs), so the server
// renders the same tab when the tabs are re-rendered for other targets.
(function () {
  function choose(tab) {
    var list = tab.closest("[role=tablist]");
    list.querySelectorAll("[role=tab]").forEach(function (other) {
      var on = other === tab;
      other.setAttribute("aria-selected", on ? "true" : "false");
      other.setAttribute("tabindex", on ? "0" : "-1");
      var panel = document.getElementById(other.getAttribute("aria-controls"));
      if (panel) { panel.hidden = !on; }
    });
    var kept = document.getElementById(list.getAttribute("data-tabs"));
    if (kept) { kept.value = tab.getAttribute("data-tab"); }
  }
  document.addEventListener("click", function (event) {
    var tab = event.target.closest ? event.target.closest("[data-tabs] [role=tab]") : null;
    if (tab) { choose(tab); }
  });
  document.addEventListener("keydown", function (event) {
    var tab = event.target.closest ? event.target.closest("[data-tabs] [role=tab]") : null;
    if (!tab || (event.key !== "ArrowRight" && event.key !== "ArrowLeft")) { return; }
    var tabs = Array.prototype.slice.call(tab.closest("[role=tablist]").querySelectorAll("[role=tab]"));
    var next = tabs[(tabs.indexOf(tab) + (event.key === "ArrowRight" ? 1 : tabs.length - 1)) % tabs.length];
    choose(next);
    next.focus();
    event.preventDefault();
  });
})();

// Destructive buttons confirm in place, never with a browser dialog: the first press (click or Enter) arms
// the button ("Yes, cancel", with the question beside it); a second press within a few seconds goes ahead;
// waiting leaves it as it was. htmx buttons carry hx-confirm (their htmx:confirm is answered here); plain
// form buttons carry data-confirm.
(function () {
  var ARMED_SECONDS = 8;

  function disarm(button) {
    if (!button.hasAttribute("data-armed")) return;
    button.removeAttribute("data-armed");
    button.classList.remove("armed");
    button.textContent = button.dataset.plainText;
    if (button.dataset.plainLabel) button.setAttribute("aria-label", button.dataset.plainLabel);
    var note = button.nextElementSibling;
    if (note && note.classList.contains("confirm-note")) note.remove();
  }

  // True when this press goes ahead; else the button is armed and the press stops here.
  function confirmed(button, question) {
    if (button.hasAttribute("data-armed")) { disarm(button); return true; }
    button.setAttribute("data-armed", "");
    button.classList.add("armed");
    button.dataset.plainText = button.textContent;
    var yes = button.getAttribute("data-confirm-text") || "Yes";
    var label = button.getAttribute("aria-label");
    if (label) {
      button.dataset.plainLabel = label;
      button.setAttribute("aria-label", yes + ": " + label);
    }
    button.textContent = yes;
    var note = document.createElement("span");
    note.className = "confirm-note";
    note.setAttribute("role", "status");
    note.textContent = question + " Press again to confirm.";
    button.after(note);
    setTimeout(function () { disarm(button); }, ARMED_SECONDS * 1000);
    return false;
  }

  document.addEventListener("htmx:confirm", function (event) {
    var button = event.target;
    var question = button.getAttribute && button.getAttribute("hx-confirm");
    if (!question) return;  // not ours: htmx asks as it would
    event.preventDefault();
    if (confirmed(button, question)) event.detail.issueRequest(); else event.detail.dropRequest();
  });

  document.addEventListener("submit", function (event) {
    var button = event.submitter;
    if (!button || !button.hasAttribute("data-confirm")) return;
    if (!confirmed(button, button.getAttribute("data-confirm"))) event.preventDefault();
  }, true);
})();

// Pages that refresh themselves while open (the queue, failures, health): an element with data-refresh
// polls with htmx and carries an "updated 5 s ago" mark. A refresh waits while a form on the page is being
// edited (a field has the focus, or holds changes not yet submitted, or a row's own form is open) and
// while the keyboard's focus is inside the part it would replace; the mark says so.
(function () {
  function editing(region) {
    var active = document.activeElement;
    if (active && active.matches && active.matches("input, select, textarea")) return true;
    if (region && active && active !== document.body && region.contains(active)) return true;
    if (document.querySelector("form[data-edited]")) return true;
    return !!(region && region.querySelector("form.reschedule"));
  }

  document.addEventListener("input", function (event) {
    var form = event.target.form;
    if (form) form.setAttribute("data-edited", "");
  });
  document.addEventListener("submit", function (event) {
    event.target.removeAttribute("data-edited");
  });

  document.addEventListener("htmx:before:request", function (event) {
    var poller = event.target;
    if (!poller.hasAttribute || !poller.hasAttribute("data-refresh")) return;
    var region = document.querySelector(poller.getAttribute("hx-target")) || poller;
    if (editing(region)) {
      poller.setAttribute("data-paused", "");
      event.preventDefault();
    } else {
      poller.removeAttribute("data-paused");
    }
  });

  function words(seconds) {
    if (seconds < 2) return "updated just now";
    if (seconds < 60) return "updated " + seconds + " s ago";
    return "updated " + Math.floor(seconds / 60) + " min ago";
  }

  function mark() {
    document.querySelectorAll("[data-refresh] [data-updated-at]").forEach(function (stamp) {
      var shown = stamp.getAttribute("data-shown-at");
      if (!shown) { shown = String(Date.now()); stamp.setAttribute("data-shown-at", shown); }
      var seconds = Math.max(0, Math.round((Date.now() - Number(shown)) / 1000));
      var paused = stamp.closest("[data-refresh]").hasAttribute("data-paused");
      stamp.textContent = words(seconds) + (paused ? " · paused while you edit" : "");
    });
  }
  setInterval(mark, 1000);
  document.addEventListener("htmx:after:settle", mark);
  document.addEventListener("DOMContentLoaded", mark);
})();

// The composer's thread: "Add an item" appends a blank item from the section's <template>, "Remove" takes one out;
// the items are numbered after the post (item 1) again, and an input event tells the counters and the previews.
// A redraw of the section (a target checked) was asked for with what the fields held when it left: what was added
// or typed while it was on its way is put back into the section it brings, and the focus with it.
(function () {
  var kept = null;
  function fieldsOf(section) {
    return Array.prototype.map.call(section.querySelectorAll("[data-thread-items] > li"), function (item) {
      return { body: item.querySelector("[name=thread_body]").value, media: item.querySelector("[name=thread_media]").value };
    });
  }
  function renumber(list) {
    Array.prototype.forEach.call(list.children, function (item, index) {
      var number = String(index + 2);
      item.querySelectorAll("[data-item-number]").forEach(function (mark) { mark.textContent = number; });
      item.querySelectorAll("textarea").forEach(function (field) {
        var label = item.querySelector('label[for="' + field.id + '"]');
        field.id = field.name.replace("thread_", "thread-") + "-" + number;
        if (label) label.htmlFor = field.id;
      });
      var remove = item.querySelector("[data-remove-thread-item]");
      if (remove) remove.setAttribute("aria-label", "Remove item " + number);
    });
  }
  function told(list) { list.dispatchEvent(new Event("input", { bubbles: true })); }

  document.addEventListener("htmx:before:swap", function () {
    var section = document.getElementById("follow-ups");
    if (!section) { kept = null; return; }
    var comment = section.querySelector("[name=first_comment_body]");
    var active = document.activeElement;
    var focused = active && section.contains(active) && active.name ? active : null;
    kept = { section: section, items: fieldsOf(section), comment: comment ? comment.value : null,
             focusName: focused ? focused.name : null,
             focusIndex: focused ? Array.prototype.indexOf.call(section.querySelectorAll("[name=" + focused.name + "]"), focused) : -1,
             caret: focused ? [focused.selectionStart, focused.selectionEnd] : null };
  });
  document.addEventListener("htmx:after:swap", function () {
    var was = kept;
    var section = document.getElementById("follow-ups");
    if (!was || !section || section === was.section) { return; }
    kept = null;
    var changed = false;
    var list = section.querySelector("[data-thread-items]");
    var blank = section.querySelector("template[data-thread-item]");
    if (list && blank) {
      var now = fieldsOf(section);
      if (JSON.stringify(now) !== JSON.stringify(was.items)) {
        while (list.children.length < was.items.length) { list.appendChild(blank.content.cloneNode(true)); }
        while (list.children.length > was.items.length) { list.lastElementChild.remove(); }
        Array.prototype.forEach.call(list.children, function (item, index) {
          item.querySelector("[name=thread_body]").value = was.items[index].body;
          item.querySelector("[name=thread_media]").value = was.items[index].media;
        });
        renumber(list);
        changed = true;
      }
    }
    var comment = section.querySelector("[name=first_comment_body]");
    if (comment && was.comment !== null && comment.value !== was.comment) { comment.value = was.comment; changed = true; }
    if (was.focusName) {
      var again = section.querySelectorAll("[name=" + was.focusName + "]")[was.focusIndex];
      if (again) {
        again.focus();
        if (was.caret && again.setSelectionRange) { again.setSelectionRange(was.caret[0], was.caret[1]); }
      }
    }
    if (changed) { told(list || section); }
  });

  document.addEventListener("click", function (event) {
    var add = event.target.closest ? event.target.closest("[data-add-thread-item]") : null;
    var remove = event.target.closest ? event.target.closest("[data-remove-thread-item]") : null;
    if (add) {
      var section = add.closest("fieldset");
      var list = section.querySelector("[data-thread-items]");
      var blank = section.querySelector("template[data-thread-item]");
      list.appendChild(blank.content.cloneNode(true));
      renumber(list);
      list.lastElementChild.querySelector("textarea").focus();
      told(list);
    } else if (remove) {
      var item = remove.closest("li");
      var items = item.parentElement;
      var next = item.nextElementSibling || item.previousElementSibling;
      item.remove();
      renumber(items);
      var focus = next ? next.querySelector("textarea") : items.closest("fieldset").querySelector("[data-add-thread-item]");
      if (focus) focus.focus();
      told(items);
    }
  });
})();
