"use strict";
(function () {
  var cards = Array.prototype.slice.call(document.querySelectorAll("[data-finding]"));
  var controls = document.getElementById("filters");
  if (controls) { controls.classList.remove("hidden"); }
  function value(id) { var el = document.getElementById(id); return el ? el.value : ""; }
  function apply() {
    var sev = value("f-severity"), fam = value("f-family"), node = value("f-node");
    var text = value("f-search").toLowerCase();
    cards.forEach(function (card) {
      var ok = (!sev || card.dataset.severity === sev) &&
        (!fam || card.dataset.family === fam) &&
        (!node || (" " + card.dataset.nodes + " ").indexOf(" " + node + " ") >= 0) &&
        (!text || card.textContent.toLowerCase().indexOf(text) >= 0);
      card.classList.toggle("hidden", !ok);
    });
  }
  ["f-severity", "f-family", "f-node", "f-search"].forEach(function (id) {
    var el = document.getElementById(id);
    if (el) { el.addEventListener("input", apply); el.addEventListener("change", apply); }
  });
  document.querySelectorAll("pre[data-copy]").forEach(function (pre) {
    var button = document.createElement("button");
    button.type = "button"; button.className = "copy"; button.textContent = "Copy";
    button.addEventListener("click", function () {
      var done = function () { button.textContent = "Copied"; };
      if (navigator.clipboard) { navigator.clipboard.writeText(pre.textContent).then(done); }
    });
    pre.parentNode.insertBefore(button, pre);
  });
  function openTarget() {
    if (!location.hash) { return; }
    var target = document.getElementById(location.hash.slice(1));
    for (var el = target; el; el = el.parentElement) {
      if (el.tagName === "DETAILS") { el.open = true; }
    }
    if (target) { target.scrollIntoView(); }
  }
  window.addEventListener("hashchange", openTarget);
  openTarget();
})();
