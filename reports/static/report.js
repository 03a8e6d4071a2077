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

  // The node matrix: find (any text of a row) and sort (by a column), over every row.
  var matrix = doc.querySelector("table.matrix tbody");
  var tools = doc.getElementById("m-tools");
  if (matrix && tools) {
    tools.classList.remove("hidden");
    var original = all("tr", matrix);
    var cell = function (row, index) {
      var cells = row.children;
      return index < cells.length ? cells[index].textContent.trim() : "";
    };
    var number = function (text) { var n = parseFloat(text); return isNaN(n) ? -1 : n; };
    var arrange = function () {
      var column = value("m-sort");
      var ordered = original.slice();
      if (column === "7") {
        ordered.sort(function (a, b) { return number(cell(b, 7)) - number(cell(a, 7)); });
      } else if (column === "8") {
        ordered.sort(function (a, b) {
          return b.querySelectorAll("td:last-child a, td:last-child span").length -
            a.querySelectorAll("td:last-child a, td:last-child span").length;
        });
      } else if (column) {
        var index = parseInt(column, 10);
        ordered.sort(function (a, b) {
          return cell(a, index).localeCompare(cell(b, index), undefined, {numeric: true});
        });
      }
      var text = value("m-search").trim().toLowerCase();
      var shown = 0;
      ordered.forEach(function (row) {
        var ok = !text || row.textContent.toLowerCase().indexOf(text) >= 0;
        row.classList.toggle("m-hidden", !ok);
        if (ok) { shown += 1; }
        matrix.appendChild(row);
      });
      var count = doc.getElementById("m-count");
      if (count) { count.textContent = text ? shown + " of " + original.length + " nodes" : ""; }
    };
    ["m-search", "m-sort"].forEach(function (id) {
      var el = doc.getElementById(id);
      if (el) { el.addEventListener("input", arrange); el.addEventListener("change", arrange); }
    });
  }

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
