// graph: draws a definition's layout (layout.js) as SVG, each state coloured by what happened
// to it (history.js's fold) and named in text, with a legend and an accessible description
// (each state is a labelled group; the whole graph a described image).

import { h } from "./dom.js";
import { layoutDefinition } from "./layout.js";

/** Outcome -> the legend's words. */
export const OUTCOMES = [
  ["succeeded", "Succeeded"],
  ["failed", "Failed"],
  ["caught", "Caught error"],
  ["running", "In progress"],
  ["not-reached", "Not reached"],
];
const WORDS = Object.fromEntries(OUTCOMES);
const MARKS = { succeeded: "✓", failed: "✕", caught: "⚠", running: "●", "not-reached": "" };

let graphCount = 0;

function pathOf(edge) {
  const [[x1, y1], ...rest] = edge.points;
  if (edge.loop) {
    return `M${x1},${y1} ` + rest.map(([x, y]) => `L${x},${y}`).join(" ");
  }
  // Straight down a lane, curves between ranks (vertical at both ends).
  let d = `M${x1},${y1}`;
  let [px, py] = [x1, y1];
  for (const [x, y] of rest) {
    if (x === px) {
      d += ` L${x},${y}`;
    } else {
      const dy = Math.max(12, (y - py) / 2);
      d += ` C${px},${py + dy} ${x},${y - dy} ${x},${y}`;
    }
    [px, py] = [x, y];
  }
  return d;
}

/**
 * The graph of `definition` (JSON text or object): a figure with the SVG and, when `statuses`
 * (Map name -> outcome) is given, a legend. Returns the figure; a definition that cannot be
 * read gives a notice instead.
 */
export function graphFigure(definition, statuses, caption = "Graph of the state machine") {
  let layout;
  try {
    layout = layoutDefinition(definition);
  } catch (error) {
    return h("div", { class: "notice error", role: "alert" }, `The definition cannot be drawn: ${error.message}`);
  }
  const id = `graph-${++graphCount}`;
  const outcomeOf = (name) => statuses?.get(name) ?? "not-reached";
  const counts = {};
  for (const node of layout.nodes) {
    if (!node.terminal) counts[outcomeOf(node.name)] = (counts[outcomeOf(node.name)] ?? 0) + 1;
  }
  const summary = statuses
    ? OUTCOMES.filter(([k]) => counts[k]).map(([k, w]) => `${counts[k]} ${w.toLowerCase()}`).join(", ")
    : `${layout.nodes.filter((n) => !n.terminal).length} states`;

  const marker = `${id}-arrow`;
  const svg = h("svg:svg", {
    class: "graph",
    viewBox: `0 0 ${Math.ceil(layout.width)} ${Math.ceil(layout.height)}`,
    width: Math.ceil(layout.width),
    height: Math.ceil(layout.height),
    role: "group",
    "aria-labelledby": `${id}-title`,
    "aria-describedby": `${id}-desc`,
  },
  h("svg:title", { id: `${id}-title` }, caption),
  h("svg:desc", { id: `${id}-desc` }, summary),
  h("svg:defs", {},
    h("svg:marker", { id: marker, viewBox: "0 0 10 10", refX: "9", refY: "5", markerWidth: "7", markerHeight: "7", orient: "auto-start-reverse" },
      h("svg:path", { d: "M0,0 L10,5 L0,10 z", class: "arrowhead" }))));

  // Drawn in three layers: Parallel and Map boxes (outer first), then edges, then states.
  const ordered = [...layout.nodes].sort((a, b) => a.depth - b.depth);
  const boxes = h("svg:g", { class: "boxes", role: "list", "aria-label": "Parallel and Map states" });
  const leaves = h("svg:g", { class: "leaves", role: "list", "aria-label": "States" });
  for (const node of ordered) {
    if (node.terminal) {
      leaves.append(h("svg:g", { class: "terminal", "aria-hidden": "true" },
        h("svg:rect", { x: node.x, y: node.y, width: node.w, height: node.h, rx: node.h / 2 }),
        h("svg:text", { x: node.x + node.w / 2, y: node.y + node.h / 2, "dominant-baseline": "central", "text-anchor": "middle" }, node.label)));
      continue;
    }
    const outcome = statuses ? outcomeOf(node.name) : "plain";
    const words = statuses ? `, ${WORDS[outcome]}` : "";
    const group = h("svg:g", {
      class: `state outcome-${outcome}${node.compound ? " compound" : ""}`,
      role: "listitem",
      "aria-label": `${node.name} (${node.type})${words}`,
      "data-state": node.name,
      "data-outcome": outcome,
    }, h("svg:title", {}, `${node.name} — ${node.type}${words}`));
    const mark = statuses ? MARKS[outcome] : "";
    if (node.compound) {
      group.append(
        h("svg:rect", { x: node.x, y: node.y, width: node.w, height: node.h, rx: 8, class: "box" }),
        h("svg:text", { x: node.x + 12, y: node.y + 19, class: "box-title" },
          `${mark} ${node.name}`.trim(),
          h("svg:tspan", { class: "type" }, `  ${node.typeLabel ?? node.type}`)));
      boxes.append(group);
    } else {
      group.append(
        h("svg:rect", { x: node.x, y: node.y, width: node.w, height: node.h, rx: 6 }),
        h("svg:text", { x: node.x + node.w / 2, y: node.y + 17, "text-anchor": "middle", class: "name" },
          `${mark} ${node.name}`.trim()),
        h("svg:text", { x: node.x + node.w / 2, y: node.y + 32, "text-anchor": "middle", class: "type" }, node.type));
      leaves.append(group);
    }
  }
  const edgeLayer = h("svg:g", { class: "edges", "aria-hidden": "true" });
  for (const edge of layout.edges) {
    edgeLayer.append(h("svg:path", { d: pathOf(edge), class: `edge edge-${edge.kind}`, "marker-end": `url(#${marker})` }));
    if (edge.label) {
      // On the first stretch of the edge (a lane's own, when it has lanes).
      const [ax, ay] = edge.points[edge.loop ? 1 : 0];
      const [bx, by] = edge.points[edge.loop ? 2 : 1];
      const x = edge.loop ? ax + 4 : (ax + bx) / 2 + 4;
      const y = (ay + by) / 2 + (edge.loop ? 0 : 4);
      edgeLayer.append(h("svg:text", { x, y, class: `edge-label edge-${edge.kind}` }, edge.label));
    }
  }
  svg.append(boxes, edgeLayer, leaves);
  const wrapper = h("div", { class: "graph-scroll", tabindex: "0", role: "region", "aria-label": caption }, svg);
  const legend = statuses
    ? h("ul", { class: "legend", "aria-label": "Legend" },
        OUTCOMES.map(([k, w]) => h("li", {}, h("span", { class: `swatch outcome-${k}`, "aria-hidden": "true" }, MARKS[k]), w)))
    : null;
  return h("figure", { class: "graph-figure" }, wrapper, legend, h("figcaption", { class: "sr-only" }, `${caption}: ${summary}`));
}
