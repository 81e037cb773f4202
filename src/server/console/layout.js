// layout: places an ASL definition's states for drawing, by code, whatever the machine. A
// layered layout: states are nodes; Next, Choices, Default and Catch are edges; a Parallel's
// branches and a Map's ItemProcessor (or Iterator) are laid out recursively inside their
// state's box. Within one scope: back edges (loops) are found by a depth-first walk from
// StartAt and set aside; each state's rank is its longest forward path from StartAt; the order
// within a rank comes from barycenter sweeps (down, then up) that lessen crossings, with an
// edge over several ranks given a lane (a placeholder node) in each rank it passes; x places
// each node over the mean of its predecessors, then pushes overlapping ones apart. Pure: no DOM.

const NODE_H = 40;
const CHAR_W = 7.4;
const PAD_X = 18;
const NODE_W_MIN = 110;
const GAP_X = 28;
const GAP_Y = 46;
const BOX_PAD = 16;
const BOX_HEAD = 30;
const BRANCH_GAP = 18;
const SWEEPS = 4;
const LOOP_MARGIN = 22;
const LANE_W = 14;

/** The states of a Map's processor (ItemProcessor, or the older Iterator). */
export function processorOf(state) {
  return state.ItemProcessor ?? state.Iterator ?? null;
}

/** Every outgoing edge of a state: {to, kind, label}. */
export function edgesOf(state) {
  const out = [];
  if (state.Type === "Choice") {
    for (const choice of state.Choices ?? []) {
      if (choice.Next) out.push({ to: choice.Next, kind: "choice", label: "" });
    }
    if (state.Default) out.push({ to: state.Default, kind: "default", label: "Default" });
  }
  if (state.Next) out.push({ to: state.Next, kind: "next", label: "" });
  for (const catcher of state.Catch ?? []) {
    if (catcher.Next) {
      out.push({ to: catcher.Next, kind: "catch", label: `Catch ${(catcher.ErrorEquals ?? []).join(", ")}` });
    }
  }
  return out;
}

function ends(state) {
  return state.End === true || state.Type === "Succeed" || state.Type === "Fail";
}

function leafSize(name, type) {
  const text = Math.max(name.length, type.length + 2);
  return { w: Math.max(NODE_W_MIN, Math.round(text * CHAR_W + 2 * PAD_X)), h: NODE_H };
}

/**
 * Lays out one scope (`{States, StartAt}`). `terminals`: add Start and End nodes. Returns
 * {w, h, nodes, edges} in the scope's own coordinates; a compound node carries `scopes`
 * (its branches, each with `dx`, `dy` inside the node).
 */
function layoutScope(scope, terminals, prefix) {
  const states = scope?.States ?? {};
  const names = Object.keys(states);
  const nodes = new Map();
  for (const name of names) {
    const state = states[name] ?? {};
    const type = String(state.Type ?? "?");
    let node;
    if (type === "Parallel" || type === "Map") {
      const inner = type === "Parallel" ? state.Branches ?? [] : [processorOf(state)].filter(Boolean);
      const scopes = inner.map((branch, i) => layoutScope(branch, false, `${prefix}${name}/${i}/`));
      let x = BOX_PAD;
      let h = 0;
      for (const sub of scopes) {
        sub.dx = x;
        sub.dy = BOX_HEAD;
        x += sub.w + BRANCH_GAP;
        h = Math.max(h, sub.h);
      }
      // A Distributed Map runs its processor in child executions, whose states are not in
      // this history: the box's title says so.
      const distributed = type === "Map" && processorOf(state)?.ProcessorConfig?.Mode === "DISTRIBUTED";
      const typeLabel = distributed ? "Map · distributed: see its Map Runs" : type;
      const titleW = Math.round((name.length + typeLabel.length + 6) * CHAR_W) + 2 * BOX_PAD;
      const w = Math.max(leafSize(name, type).w, titleW, x - BRANCH_GAP + BOX_PAD);
      // Centre the branches when the title is wider than they are.
      const spare = w - (x - BRANCH_GAP + BOX_PAD);
      if (spare > 0) for (const sub of scopes) sub.dx += spare / 2;
      node = { name, type, typeLabel, w, h: BOX_HEAD + h + BOX_PAD, scopes, compound: true };
    } else {
      node = { name, type, ...leafSize(name, type) };
    }
    nodes.set(name, node);
  }
  const edges = [];
  for (const name of names) {
    for (const edge of edgesOf(states[name] ?? {})) {
      if (nodes.has(edge.to)) edges.push({ from: name, ...edge });
    }
  }
  const START = `${prefix}⟨start⟩`;
  const END = `${prefix}⟨end⟩`;
  if (terminals) {
    nodes.set(START, { name: START, type: "Start", label: "Start", w: 72, h: 30, terminal: true });
    nodes.set(END, { name: END, type: "End", label: "End", w: 72, h: 30, terminal: true });
    if (nodes.has(scope.StartAt)) edges.push({ from: START, to: scope.StartAt, kind: "next", label: "" });
    for (const name of names) {
      if (ends(states[name] ?? {})) edges.push({ from: name, to: END, kind: "next", label: "" });
    }
  }

  // Depth-first from the start (then any state not reached), marking back edges.
  const succ = new Map([...nodes.keys()].map((n) => [n, []]));
  for (const edge of edges) succ.get(edge.from).push(edge);
  const seen = new Set();
  const onStack = new Set();
  const postorder = [];
  const discovery = [];
  const visit = (root) => {
    // Iterative, so a long chain of states cannot overflow the stack.
    const stack = [[root, 0]];
    seen.add(root);
    onStack.add(root);
    discovery.push(root);
    while (stack.length) {
      const top = stack[stack.length - 1];
      const out = succ.get(top[0]);
      if (top[1] < out.length) {
        const edge = out[top[1]++];
        if (onStack.has(edge.to)) {
          edge.back = true;
        } else if (!seen.has(edge.to)) {
          seen.add(edge.to);
          onStack.add(edge.to);
          discovery.push(edge.to);
          stack.push([edge.to, 0]);
        }
      } else {
        onStack.delete(top[0]);
        postorder.push(top[0]);
        stack.pop();
      }
    }
  };
  const roots = [terminals ? START : scope.StartAt, ...nodes.keys()];
  for (const root of roots) if (nodes.has(root) && !seen.has(root)) visit(root);

  // Longest-path ranks over the forward edges, in topological order.
  const rank = new Map([...nodes.keys()].map((n) => [n, 0]));
  for (const name of postorder.slice().reverse()) {
    for (const edge of succ.get(name)) {
      if (!edge.back) rank.set(edge.to, Math.max(rank.get(edge.to), rank.get(name) + 1));
    }
  }
  if (terminals) {
    let last = 0;
    for (const [name, r] of rank) if (name !== END) last = Math.max(last, r);
    rank.set(END, last + 1);
  }
  const rankCount = Math.max(0, ...rank.values()) + 1;
  const layers = Array.from({ length: rankCount }, () => []);
  for (const name of discovery) layers[rank.get(name)].push(name);

  // A forward edge over more than one rank passes through a small placeholder node in each
  // rank between, so it gets a lane of its own instead of crossing the states there.
  const segments = [];
  let dummies = 0;
  for (const edge of edges) {
    if (edge.back) continue;
    edge.via = [];
    let from = edge.from;
    for (let r = rank.get(edge.from) + 1; r < rank.get(edge.to); r += 1) {
      const name = `${prefix}⟨lane ${dummies += 1}⟩`;
      nodes.set(name, { name, type: "", w: LANE_W, h: 0, dummy: true });
      rank.set(name, r);
      layers[r].push(name);
      edge.via.push(name);
      segments.push({ from, to: name });
      from = name;
    }
    segments.push({ from, to: edge.to });
  }

  // Barycenter sweeps.
  const preds = new Map([...nodes.keys()].map((n) => [n, []]));
  const down = new Map([...nodes.keys()].map((n) => [n, []]));
  for (const segment of segments) {
    preds.get(segment.to).push(segment.from);
    down.get(segment.from).push(segment.to);
  }
  const index = new Map();
  const reindex = () => layers.forEach((layer) => layer.forEach((n, i) => index.set(n, i / Math.max(1, layer.length))));
  reindex();
  const sweep = (layer, neighbours) => {
    const bary = new Map(layer.map((n, i) => {
      const around = neighbours(n);
      return [n, around.length ? around.reduce((s, m) => s + index.get(m), 0) / around.length : i / Math.max(1, layer.length)];
    }));
    layer.sort((a, b) => bary.get(a) - bary.get(b));
  };
  for (let i = 0; i < SWEEPS; i += 1) {
    for (let r = 1; r < rankCount; r += 1) {
      sweep(layers[r], (n) => preds.get(n));
      reindex();
    }
    for (let r = rankCount - 2; r >= 0; r -= 1) {
      sweep(layers[r], (n) => down.get(n));
      reindex();
    }
  }

  // y by rank; x over the predecessors' mean, overlaps pushed apart.
  let y = 0;
  for (const layer of layers) {
    const height = Math.max(0, ...layer.map((n) => nodes.get(n).h));
    for (const name of layer) {
      const node = nodes.get(name);
      node.y = y + (height - node.h) / 2;
      node.rankTop = y;
      node.rankBottom = y + height;
    }
    y += height + GAP_Y;
  }
  const height = Math.max(0, y - GAP_Y);
  for (const layer of layers) {
    let right = -Infinity;
    for (const name of layer) {
      const node = nodes.get(name);
      const placed = preds.get(name).map((p) => nodes.get(p)).filter((p) => p.x !== undefined);
      const centre = placed.length ? placed.reduce((s, p) => s + p.x + p.w / 2, 0) / placed.length : 0;
      node.x = Math.max(centre - node.w / 2, right + GAP_X);
      right = node.x + node.w;
    }
  }
  // Spread each layer's overlap evenly: shift a layer left so it sits around its wanted centre.
  const minX = Math.min(0, ...[...nodes.values()].map((n) => n.x));
  for (const node of nodes.values()) node.x -= minX;
  let width = Math.max(0, ...[...nodes.values()].map((n) => n.x + n.w));

  // Edge routes: forward edges as curves from bottom to top; back edges around the right.
  for (const edge of edges) {
    const a = nodes.get(edge.from);
    const b = nodes.get(edge.to);
    if (edge.back || rank.get(edge.to) <= rank.get(edge.from)) {
      const lowest = Math.min(rank.get(edge.to), rank.get(edge.from));
      const highest = Math.max(rank.get(edge.to), rank.get(edge.from));
      let side = Math.max(a.x + a.w, b.x + b.w);
      for (const [name, r] of rank) {
        if (r >= lowest && r <= highest) side = Math.max(side, nodes.get(name).x + nodes.get(name).w);
      }
      side += LOOP_MARGIN;
      width = Math.max(width, side + 8);
      edge.loop = true;
      edge.points = [[a.x + a.w, a.y + a.h / 2], [side, a.y + a.h / 2], [side, b.y + b.h / 2], [b.x + b.w, b.y + b.h / 2]];
    } else {
      edge.points = [[a.x + a.w / 2, a.y + a.h]];
      for (const name of edge.via ?? []) {
        const lane = nodes.get(name);
        edge.points.push([lane.x + lane.w / 2, lane.rankTop], [lane.x + lane.w / 2, lane.rankBottom]);
      }
      edge.points.push([b.x + b.w / 2, b.y]);
    }
  }
  return { w: width, h: height, nodes: [...nodes.values()].filter((n) => !n.dummy), edges };
}

/**
 * The layout of a whole definition (an object or JSON text): {width, height, nodes, edges},
 * every coordinate absolute. `nodes[i]`: {name, type, label, x, y, w, h, compound, terminal,
 * depth}; `edges[i]`: {from, to, kind, label, loop, points}.
 */
export function layoutDefinition(definition) {
  const parsed = typeof definition === "string" ? JSON.parse(definition) : definition;
  const top = layoutScope(parsed, true, "");
  const nodes = [];
  const edges = [];
  const flatten = (scope, ox, oy, depth) => {
    for (const node of scope.nodes) {
      const placed = { ...node, x: node.x + ox, y: node.y + oy, depth, label: node.label ?? node.name };
      delete placed.scopes;
      nodes.push(placed);
      for (const sub of node.scopes ?? []) flatten(sub, placed.x + sub.dx, placed.y + sub.dy, depth + 1);
    }
    for (const edge of scope.edges) {
      edges.push({ ...edge, points: edge.points.map(([x, y]) => [x + ox, y + oy]) });
    }
  };
  const margin = 12;
  flatten(top, margin, margin, 0);
  return { width: top.w + 2 * margin, height: top.h + 2 * margin, nodes, edges };
}
