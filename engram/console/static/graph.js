// The memory graph: fetch the page's graph JSON, draw it with cytoscape.js (vendor/cytoscape, MIT) using
// its force-directed "cose" layout, colour nodes by their first tag, show the text on hover, open the
// memory on click. Plain JS, no build step.
(function () {
  "use strict";
  var PALETTE = ["#2f5bd3", "#d9480f", "#2b8a3e", "#ae3ec9", "#e8590c", "#0c8599", "#c2255c", "#5c940d",
                 "#1971c2", "#f08c00", "#6741d9", "#087f5b"];
  var UNTAGGED = "#868e96";
  var container = document.getElementById("graph");
  var tip = document.getElementById("graph-tip");
  var status = document.getElementById("graph-status");

  function colours(nodes) {
    var counts = {};
    nodes.forEach(function (n) { var t = n.tags[0]; if (t) { counts[t] = (counts[t] || 0) + 1; } });
    var order = Object.keys(counts).sort(function (a, b) { return counts[b] - counts[a] || (a < b ? -1 : 1); });
    var map = {};
    order.forEach(function (tag, i) { map[tag] = i < PALETTE.length ? PALETTE[i] : UNTAGGED; });
    return { map: map, order: order, counts: counts };
  }

  function legend(c) {
    var list = document.getElementById("graph-legend");
    c.order.slice(0, PALETTE.length).forEach(function (tag) {
      var li = document.createElement("li");
      var dot = document.createElement("span");
      dot.className = "swatch";
      dot.style.background = c.map[tag];
      li.appendChild(dot);
      li.appendChild(document.createTextNode(tag + " (" + c.counts[tag] + ")"));
      list.appendChild(li);
    });
  }

  function keyboardList(nodes) {  // the canvas is not focusable: the same memories as links
    var list = document.querySelector("#graph-list ol");
    nodes.forEach(function (n) {
      var li = document.createElement("li");
      var a = document.createElement("a");
      a.href = n.href;
      a.textContent = n.text;
      li.appendChild(a);
      list.appendChild(li);
    });
  }

  function draw(data) {
    var c = colours(data.nodes);
    var elements = data.nodes.map(function (n) {
      return { data: { id: n.id, text: n.text, href: n.href, colour: c.map[n.tags[0]] || UNTAGGED } };
    }).concat(data.edges.map(function (e, i) {
      return { data: { id: "e" + i, source: e.source, target: e.target, similarity: e.similarity } };
    }));
    var cy = cytoscape({
      container: container,
      elements: elements,
      style: [
        { selector: "node", style: { "background-color": "data(colour)", width: 14, height: 14,
                                     "border-width": 1, "border-color": "#fff" } },
        { selector: "node:active, node.hover", style: { width: 22, height: 22, "border-color": "#1d2330" } },
        { selector: "edge", style: { width: "mapData(similarity, 400, 1000, 0.5, 4)", "line-color": "#adb5bd",
                                     opacity: 0.7 } }
      ],
      layout: { name: "cose", animate: false, randomize: true, nodeRepulsion: function () { return 9000; },
                idealEdgeLength: function (e) { return 140 - e.data("similarity") / 10; }, numIter: 1500 },
      wheelSensitivity: 0.3
    });
    cy.on("mouseover", "node", function (ev) {
      var n = ev.target, p = n.renderedPosition();
      n.addClass("hover");
      tip.textContent = n.data("text");
      tip.style.left = Math.min(p.x + 14, container.clientWidth - 260) + "px";
      tip.style.top = p.y + 14 + "px";
      tip.hidden = false;
      container.style.cursor = "pointer";
    });
    cy.on("mouseout", "node", function (ev) {
      ev.target.removeClass("hover");
      tip.hidden = true;
      container.style.cursor = "";
    });
    cy.on("tap", "node", function (ev) { window.location.assign(ev.target.data("href")); });
    legend(c);
    keyboardList(data.nodes);
    status.textContent = data.nodes.length + " memories, " + data.edges.length + " links.";
    container.dataset.nodes = String(cy.nodes().length);
    container.dataset.edges = String(cy.edges().length);
    container.dataset.state = "ready";
    window.engramGraph = cy;  // for the browser tests and the curious
  }

  fetch(container.dataset.src, { credentials: "same-origin", headers: { Accept: "application/json" } })
    .then(function (r) {
      return r.json().then(function (body) {
        if (!r.ok) { throw new Error(body.message || ("HTTP " + r.status)); }
        return body;
      });
    })
    .then(draw)
    .catch(function (err) {
      status.textContent = "Could not draw the graph: " + err.message;
      container.dataset.state = "error";
    });
})();
