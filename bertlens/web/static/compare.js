// bertlens web explorer, the Compare view: two of the served models' embedding spaces side by side (POST /api/diff,
// what `bertlens diff A B --json` prints), and one token's nearest tokens in both (POST /api/diff/token). Shown only
// when the server has two models or more. Uses app.js's helpers ($, el, api, busy, plot, table, fmt, visible, escape,
// DIVERGING). Text from the API is inserted as text, never as HTML.
"use strict";

const compare = { data: null, asked: null };
const SHOWN_NEIGHBOURS = 5; // neighbours per space in the moved-tokens table (the token panel shows all k)
const CKA_SCALE = DIVERGING.slice(5).map(([at, colour]) => [(at - 0.5) * 2, colour]); // 0 white … 1 dark red

// The models to choose from (A the first, B the second by default), then the view's form runs once.
function openCompare() {
  const form = $("#compare-form");
  if (!form.model_a.options.length) {
    for (const [select, chosen] of [[form.model_a, 0], [form.model_b, 1]]) {
      select.replaceChildren(...state.models.map((m) => el("option", { value: m.name }, `${m.name} (${m.family}, ${m.hidden_size} wide)`)));
      select.selectedIndex = Math.min(chosen, state.models.length - 1);
    }
    if (state.limits.max_diff_k) form.k.max = String(state.limits.max_diff_k);
  }
  form.requestSubmit();
}

function comparedNames() {
  return compare.asked ? [compare.asked.model_a, compare.asked.model_b] : ["A", "B"];
}

async function submitCompare(event) {
  event.preventDefault();
  const form = event.target;
  const out = $("#compare-result");
  const body = {
    model_a: form.model_a.value,
    model_b: form.model_b.value,
    k: Number(form.k.value || 10),
    corpus: form.corpus.value || null,
    contextual: form.contextual.checked,
  };
  await busy(form, async () => {
    const layers = body.contextual ? " and runs the corpus's words through both models' layers (up to a minute)" : "";
    out.replaceChildren(el("p", { class: "note computing", role: "status" },
      `Computing… comparing ${body.model_a} with ${body.model_b}: every shared token's ${body.k} nearest tokens in ` +
      `each space, and the rotation that best maps A onto B (a few seconds on a full vocabulary)${layers}.`));
    const data = await api("/api/diff", body);
    compare.data = data;
    compare.asked = body;
    await renderCompare(data);
  });
}

function summary(data) {
  const [a, b] = comparedNames();
  const vocabulary = data.same_vocabulary ? "one vocabulary" : "the tokens both vocabularies hold";
  const padded = data.padded ? `; ${data.padded}'s rows padded with zeros to ${data.padded === "A" ? data.width_b : data.width_a}` : "";
  const rows = [
    ["A", `${a}: ${data.model_a}`],
    ["B", `${b}: ${data.model_b}`],
    ["tokens compared", `${data.tokens.toLocaleString("en")} (${vocabulary}); widths ${data.width_a} and ${data.width_b}${padded}`],
    [`neighbour overlap (Jaccard of the ${data.k} nearest)`, `mean ${fmt(data.overlap_mean, 3)}, median ${fmt(data.overlap_median, 3)}`],
    ["aligned fit (orthogonal Procrustes, A onto B)", `mean cosine ${fmt(data.fit, 4)}`],
    ["residual after alignment (1 − cosine)", `mean ${fmt(data.residual_mean, 3)}, median ${fmt(data.residual_median, 3)}`],
  ];
  if (data.raw_cosine_mean !== null) {
    rows.push(["raw row-to-row cosine, no alignment", `mean ${fmt(data.raw_cosine_mean, 3)}: meaningful only when B continues A's training from A's very rows`]);
  }
  const wrap = table(["", ""], rows, { class: "summary" });
  $("thead", wrap).remove(); // a name and its figures on each row: no headings
  return wrap;
}

function groupRows(groups) {
  return groups.map((g) => [g.label, g.tokens, g.overlap, g.residual]);
}

async function renderCompare(data) {
  const out = $("#compare-result");
  out.replaceChildren(summary(data), el("p", { class: "note why" }, el("strong", {}, "Why align: "), data.why));
  const groups = el("div", {}, el("h3", {}, "By kind of token"),
    table(["kind", "tokens", "mean overlap", "mean residual"], groupRows(data.by_kind), { format: (v) => fmt(v, 3) }));
  if (data.by_frequency.length) {
    groups.append(el("h3", {}, `By the token's count in ${data.corpus}`),
      table(["count", "tokens", "mean overlap", "mean residual"], groupRows(data.by_frequency), { format: (v) => fmt(v, 3) }));
  }
  const histogram = el("div", { class: "histogram" });
  out.append(el("div", { class: "two" }, groups, histogram));
  const bins = data.histogram.map((_, i) => `${(i / 10).toFixed(1)}–${((i + 1) / 10).toFixed(1)}`);
  await plot(histogram, [{ type: "bar", x: bins, y: data.histogram, marker: { color: "#6f8fd1" }, hovertemplate: "overlap %{x}: %{y} tokens<extra></extra>" }], {
    height: 300, title: { text: `Neighbour overlap of the ${data.tokens.toLocaleString("en")} tokens`, font: { size: 14 } },
    xaxis: { title: { text: `overlap of the ${data.k} nearest tokens in A and in B` }, type: "category" },
    yaxis: { title: { text: "tokens" } }, margin: { l: 60, r: 10, t: 40, b: 60 },
  }, "overlap-histogram");
  out.append(el("h3", {}, "Both spaces in one aligned plane"),
    el("p", { class: "note" }, "A's rows rotated onto B's (Procrustes), then both projected together (PCA): grey, words drawn " +
      "for context (light: in A, dark: in B); each arrow runs from a token that moved most in A to the same token in B. " +
      "Click a token, here or in the table, for its nearest tokens in both spaces."));
  const plane = el("div", { class: "plane" });
  out.append(plane, el("div", { id: "compare-token", class: "token-pair", "aria-live": "polite" }));
  await drawPlane(plane, data);
  const [a, b] = comparedNames();
  const rows = data.moved.map((m, i) => [i + 1, tokenButton(m.token), m.kind, m.overlap, m.residual,
    el("span", { class: "near" }, m.neighbours_a.slice(0, SHOWN_NEIGHBOURS).map((n) => visible(n.token)).join(", ")),
    el("span", { class: "near" }, m.neighbours_b.slice(0, SHOWN_NEIGHBOURS).map((n) => visible(n.token)).join(", "))]);
  out.append(el("h3", {}, `The ${data.moved.length} tokens that moved most`),
    el("p", { class: "note" }, "Largest residual after alignment first (special tokens left out); overlap is the share of " +
      `the ${data.k} nearest tokens kept (Jaccard).`),
    table(["#", "token", "kind", "overlap", "residual", `nearest in A (${a})`, `nearest in B (${b})`], rows,
      { class: "moved", format: (v) => fmt(v, 3), keep: 2 }));
  if (data.contextual) await renderLayers(out, data.contextual);
}

function tokenButton(token) {
  return el("button", { type: "button", class: "link", title: "its nearest tokens in A and in B", onclick: () => showPair(token) }, visible(token));
}

async function drawPlane(container, data) {
  const moved = data.plane.filter((p) => p.moved);
  const background = data.plane.filter((p) => !p.moved);
  const hover = (p, where) => escape(`${visible(p.token)} (${where})`);
  const points = (list, end, name, colour, size) => ({
    type: "scatter", mode: "markers", name, x: list.map((p) => p[end][0]), y: list.map((p) => p[end][1]),
    customdata: list.map((p) => p.token), hovertext: list.map((p) => hover(p, end === "a" ? "A, aligned" : "B")),
    hoverinfo: "text", marker: { color: colour, size },
  });
  const traces = [
    points(background, "a", "words in A (aligned)", "#d3d7de", 6),
    points(background, "b", "words in B", "#9aa1ad", 6),
    points(moved, "a", "moved most: in A", "#2857b8", 9),
    Object.assign(points(moved, "b", "moved most: in B", "#d6604d", 9), {
      mode: "markers+text", text: moved.map((p) => escape(visible(p.token))), textposition: "top center",
      textfont: { size: 12, color: "#1d2330" },
    }),
  ];
  const arrows = moved.map((p) => ({
    x: p.b[0], y: p.b[1], ax: p.a[0], ay: p.a[1], xref: "x", yref: "y", axref: "x", ayref: "y", text: "",
    showarrow: true, arrowhead: 2, arrowsize: 1, arrowwidth: 1.3, arrowcolor: "rgba(214,96,77,0.75)", standoff: 4,
  }));
  const width = container.clientWidth || 600;
  const div = await plot(container, traces, {
    height: Math.round(Math.min(640, Math.max(380, width * 0.75))), hovermode: "closest", annotations: arrows,
    xaxis: { title: { text: "aligned plane 1" }, zeroline: false }, yaxis: { title: { text: "aligned plane 2" }, zeroline: false },
    legend: { orientation: "h", x: 0, y: 1.02, yanchor: "bottom" }, margin: { l: 50, r: 10, t: width < 600 ? 70 : 40, b: 50 },
  }, "aligned-plane");
  div.dataset.moved = String(moved.length);
  div.on("plotly_click", (event) => {
    const point = event.points.find((p) => typeof p.customdata === "string");
    if (point) showPair(point.customdata);
  });
}

// One token's nearest tokens in A and in B, side by side; those kept in both are marked.
async function showPair(token) {
  const box = $("#compare-token");
  if (!box || !compare.asked) return;
  const section = $("#view-compare");
  const { model_a, model_b, k } = compare.asked;
  box.replaceChildren(el("p", { class: "note", role: "status" }, `Looking up “${visible(token)}” in both spaces…`));
  box.scrollIntoView({ behavior: "smooth", block: "nearest" });
  let change;
  try {
    change = await api("/api/diff/token", { model_a, model_b, k, token });
  } catch (error) {
    box.replaceChildren();
    showError(section, error);
    return;
  }
  const shared = new Set(change.shared);
  const side = (name, neighbours) => el("div", { class: "side" }, el("h4", {}, name),
    table(["#", "token", "cosine"], neighbours.map((n, i) => [i + 1,
      el("span", { class: shared.has(n.token) ? "kept" : null, title: shared.has(n.token) ? "near it in both spaces" : null },
        tokenButton(n.token)), n.cosine]), { format: (v) => fmt(v, 3) }));
  const raw = change.raw_cosine === null ? "" : `; raw cosine ${fmt(change.raw_cosine, 3)} (no alignment)`;
  const count = change.count === null ? "" : `; ${change.count.toLocaleString("en")} times in the corpus`;
  box.replaceChildren(
    el("h3", {}, `“${visible(change.token)}”`, el("span", { class: "kind" }, ` ${change.kind}`)),
    el("p", { class: "note" }, `Overlap ${fmt(change.overlap, 3)}: ${change.shared.length} of its ${k} nearest tokens ` +
      `are near it in both spaces (in bold); residual after alignment ${fmt(change.residual, 3)}${raw}${count}. Click a token to follow it.`),
    el("div", { class: "two" }, side(`Nearest in A (${model_a})`, change.neighbours_a), side(`Nearest in B (${model_b})`, change.neighbours_b)));
}

async function renderLayers(out, c) {
  const heat = el("div", { class: "cka" });
  out.append(el("h3", {}, "The layers: linear CKA of every pair"),
    el("p", { class: "note" }, `Over ${c.occurrences.toLocaleString("en")} word occurrences from ${c.texts.toLocaleString("en")} ` +
      `texts of ${c.corpus}, each read as one word by both models (layer 0 = embedding output). 1: the two layers hold the ` +
      "same geometry up to rotation and scale; 0: unrelated."), heat);
  const rows = c.cka.map((_, i) => String(i));
  const columns = c.cka[0].map((_, j) => String(j));
  const width = heat.clientWidth || 600;
  const div = await plot(heat, [{
    type: "heatmap", z: c.cka, x: columns, y: rows, zmin: 0, zmax: 1, colorscale: CKA_SCALE,
    texttemplate: "%{z:.2f}", hovertemplate: "A layer %{y}, B layer %{x}: CKA %{z:.3f}<extra></extra>",
    colorbar: { title: { text: "CKA" }, thickness: 12 },
  }], {
    height: Math.round(Math.min(520, Math.max(300, width * 0.7))), xaxis: { title: { text: "layer of B" }, type: "category" },
    yaxis: { title: { text: "layer of A" }, type: "category", autorange: "reversed" }, margin: { l: 60, r: 10, t: 20, b: 50 },
  }, "square");
  div.dataset.layers = `${rows.length}x${columns.length}`;
  const words = c.words.map((w) => [visible(w.word), w.count, w.overlap]);
  out.append(el("p", { class: "note" }, `Contextual neighbours at layer ${c.layer_a} of A and ${c.layer_b} of B: each ` +
    `occurrence's ${c.k} nearest occurrences; mean overlap ${fmt(c.overlap_mean, 3)}. The words whose neighbours changed most:`),
    words.length ? table(["word", "occurrences", "overlap"], words, { format: (v) => fmt(v, 3) }) : el("p", { class: "note" }, "No word was seen twice."));
  if (c.note) out.append(el("p", { class: "note" }, c.note));
}

// ---------- start ----------

$("#compare-form").addEventListener("submit", submitCompare);
