// The memory graph: fetch the page's graph JSON, draw it with cytoscape.js (vendor/cytoscape, MIT) using
// its force-directed "cose" layout, colour nodes by tag (the twelve commonest first tags), show the text on hover, open the
// memory on click. Plain JS, no build step.
(function () {
  "use strict";
  // Twelve hues far enough apart to tell clusters from one another (Tableau 10 plus two).
  var PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#59a14f", "#b07aa1", "#17becf", "#edc948", "#9c755f",
                 "#ff9da7", "#76b7b2", "#1f3a93", "#bcbd22"];
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

  function colourOf(node, c) {  // its first tag that has a colour of its own, so fewer nodes stay grey
    for (var i = 0; i < node.tags.length; i++) {
      if (c.map[node.tags[i]] && c.map[node.tags[i]] !== UNTAGGED) {
        node.legendTag = node.tags[i];
        return c.map[node.tags[i]];
      }
    }
    return UNTAGGED;
  }

  function legend(c, nodes) {
    var coloured = {};  // how many nodes each legend entry colours
    nodes.forEach(function (n) { var k = n.legendTag || "other or untagged"; coloured[k] = (coloured[k] || 0) + 1; });
    var list = document.getElementById("graph-legend");
    var shown = c.order.slice(0, PALETTE.length);
    shown.concat(["other or untagged"]).forEach(function (tag) {
      var li = document.createElement("li");
      var dot = document.createElement("span");
      dot.className = "swatch";
      dot.style.background = c.map[tag] || UNTAGGED;
      li.appendChild(dot);
      li.appendChild(document.createTextNode(tag + " (" + (coloured[tag] || 0) + ")"));
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
      return { data: { id: n.id, text: n.text, href: n.href, colour: colourOf(n, c) } };
    }).concat(data.edges.map(function (e, i) {
      return { data: { id: "e" + i, source: e.source, target: e.target, similarity: e.similarity } };
    }));
    var cy = cytoscape({
      container: container,
      elements: elements,
      style: [
        { selector: "node", style: { "background-color": "data(colour)", width: 16, height: 16,
                                     "border-width": 1, "border-color": "#fff" } },
        { selector: "node:active, node.hover", style: { width: 22, height: 22, "border-color": "#1d2330" } },
        { selector: "edge", style: { width: "mapData(similarity, 400, 1000, 0.5, 4)", "line-color": "#adb5bd",
                                     opacity: 0.7 } }
      ],
      // cose (force-directed) tuned on the example space: short springs and moderate repulsion keep
      // clusters of similar memories compact and legible, starting spread over the container's shape.
      layout: { name: "cose", animate: false, randomize: true, padding: 10, componentSpacing: 40,
                nodeRepulsion: function () { return 6000; }, nodeOverlap: 8, numIter: 2000,
                idealEdgeLength: function (e) { return 70 - e.data("similarity") / 20; },
                boundingBox: { x1: 0, y1: 0, w: container.clientWidth, h: container.clientHeight } }
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
    legend(c, data.nodes);
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
