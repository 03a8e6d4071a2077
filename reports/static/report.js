"use strict";
// Progressive enhancement only: the report reads fully without this script
// (details/summary do the folding). It adds filters, search, copy buttons, deep links
// that open their finding, and opening every fold for printing. No network, no storage.
(function () {
  var doc = document;
  var all = function (selector, root) {
    return Array.prototype.slice.call((root || doc).querySelectorAll(selector));
  };
  var cards = all("[data-finding]");
  var groups = all("[data-group]");
  var rows = all("tr[data-node]");
  var controls = doc.getElementById("filters");
  if (controls) { controls.classList.remove("hidden"); }

  function value(id) { var el = doc.getElementById(id); return el ? el.value : ""; }
  function hasNode(el, node) {
    return (" " + (el.getAttribute("data-nodes") || "") + " ").indexOf(" " + node + " ") >= 0;
  }

  function apply() {
    var sev = value("f-severity"), fam = value("f-family"), node = value("f-node");
    var text = value("f-search").trim().toLowerCase();
    var active = !!(sev || fam || node || text);
    var shown = 0;
    cards.forEach(function (card) {
      var ok = (!sev || card.getAttribute("data-severity") === sev) &&
        (!fam || card.getAttribute("data-family") === fam) &&
        (!node || hasNode(card, node)) &&
        (!text || card.textContent.toLowerCase().indexOf(text) >= 0);
      card.classList.toggle("hidden", !ok);
      if (ok) { shown += 1; }
    });
    groups.forEach(function (group) {
      var visible = group.querySelector("[data-finding]:not(.hidden)") !== null;
      group.classList.toggle("hidden", active && !visible);
      if (active && visible && group.tagName === "DETAILS") { group.open = true; }
    });
    rows.forEach(function (row) {
      row.classList.toggle("hidden", !!node && row.getAttribute("data-node") !== node);
    });
    var count = doc.getElementById("f-count");
    if (count) {
      count.textContent = active ? shown + " of " + cards.length + " findings shown" : "";
    }
    var empty = doc.getElementById("f-empty");
    if (empty) { empty.classList.toggle("hidden", !active || shown > 0); }
  }
  ["f-severity", "f-family", "f-node", "f-search"].forEach(function (id) {
    var el = doc.getElementById(id);
    if (el) { el.addEventListener("input", apply); el.addEventListener("change", apply); }
  });
  doc.addEventListener("keydown", function (event) {
    var tag = (event.target && event.target.tagName) || "";
    if (event.key === "/" && !/^(INPUT|SELECT|TEXTAREA)$/.test(tag)) {
      var search = doc.getElementById("f-search");
      if (search) { event.preventDefault(); search.focus(); }
    }
  });

  function copyText(pre, button) {
    var text = pre.textContent;
    var done = function () {
      button.textContent = "Copied";
      window.setTimeout(function () { button.textContent = "Copy"; }, 1500);
    };
    var fallback = function () {
      var range = doc.createRange();
      range.selectNodeContents(pre);
      var selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
      try { if (doc.execCommand("copy")) { done(); } } catch (err) { /* selected instead */ }
    };
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(text).then(done, fallback);
    } else {
      fallback();
    }
  }
  all("pre[data-copy]").forEach(function (pre) {
    var button = doc.createElement("button");
    button.type = "button";
    button.className = "copy";
    button.textContent = "Copy";
    button.setAttribute("aria-label", "Copy these commands");
    button.addEventListener("click", function () { copyText(pre, button); });
    pre.parentNode.insertBefore(button, pre);
  });

  function openTarget() {
    var id = decodeURIComponent(location.hash.slice(1));
    var note = doc.getElementById("missing-target");
    if (note) { note.classList.add("hidden"); }
    if (!id) { return; }
    var target = doc.getElementById(id);
    if (!target) {
      if (note && id.indexOf("finding-") === 0) {
        note.textContent = "Finding " + id.slice(8) + " is not shown in full in this file " +
          "(its group is capped); the JSON report has every finding.";
        note.classList.remove("hidden");
      }
      return;
    }
    for (var el = target; el; el = el.parentElement) {
      if (el.tagName === "DETAILS") { el.open = true; }
      if (el.classList) { el.classList.remove("hidden"); }
    }
    target.scrollIntoView();
  }
  window.addEventListener("hashchange", openTarget);
  openTarget();

  var closed = [];
  window.addEventListener("beforeprint", function () {
    closed = all("details:not([open])");
    closed.forEach(function (el) { el.open = true; });
  });
  window.addEventListener("afterprint", function () {
    closed.forEach(function (el) { el.open = false; });
    closed = [];
  });
})();
