// bertlens web explorer: plain JavaScript, no build step. Every number comes from the JSON API (/docs), which
// returns the same data as the `bertlens` commands with --json. Text from the API is always inserted as text
// (textContent), never as HTML.
"use strict";

const state = { model: null, models: [], limits: {}, ran: new Set(), projection: null, status: null, prepared: new Set() };
const VIEWS = ["tokens", "embedding", "similar", "context", "projection", "corpus", "compare", "model"];
const PLOT_CONFIG = { displaylogo: false, responsive: true };
// One diverging scale everywhere, as the CLI's pictures (matplotlib's RdBu_r): blue negative, white 0, red positive.
// Spelled out: plotly.js's own "RdBu" runs the other way (blue low … red high only when NOT reversed), which once
// put blue on the positive end of a legend that said red.
const DIVERGING = [
  [0, "#053061"], [0.1, "#2166ac"], [0.2, "#4393c3"], [0.3, "#92c5de"], [0.4, "#d1e5f0"], [0.5, "#f7f7f7"],
  [0.6, "#fddbc7"], [0.7, "#f4a582"], [0.8, "#d6604d"], [0.9, "#b2182b"], [1, "#67001f"],
];

// ---------- small helpers ----------

function $(selector, root = document) {
  return root.querySelector(selector);
}

function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function fmt(value, digits = 4) {
  if (value === null || value === undefined) return "–";
  if (typeof value !== "number") return String(value);
  if (Number.isInteger(value)) return String(value);
  if (value !== 0 && Math.abs(value) < 1e-3) return value.toExponential(2);
  return value.toPrecision(digits);
}

function visible(piece) {
  // whitespace and control characters shown as escapes, as the CLI's tables do
  return String(piece).replace(/[\u0000-\u001f\u007f\u00a0\u2028\u2029]/g, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));
}

// A number as the CLI's tables print it (core/results.py `cell`): 4 significant digits without trailing zeros, or
// two decimals and a two-digit exponent below 1e-3 (2.38e-07), so that a sentence quoting a value from the library
// shows the number the table shows.
function cell(value) {
  if (typeof value !== "number" || Number.isInteger(value)) return fmt(value);
  if (Math.abs(value) < 1e-3) return value.toExponential(2).replace(/e([+-])(\d)$/, (_, sign, digit) => `e${sign}0${digit}`);
  return String(Number(value.toPrecision(4)));
}

// A table in a box that scrolls sideways when it is wider than the screen: its first column stays in view (sticky;
// `keep: 2` keeps the second too, for a table whose first column is only a row number), and while columns lie beyond
// an edge a shadow falls on that edge and a hint above it says "scroll →".
function table(headers, rows, options = {}) {
  const format = options.format || fmt; // how numbers are written
  const head = el("tr", {}, headers.map((h) => el("th", { scope: "col" }, h)));
  const body = rows.map((row) => el("tr", {}, row.map((value) => el("td", { class: typeof value === "number" ? "num" : null }, value instanceof Node ? value : format(value)))));
  const inner = el("table", { class: options.class || null }, el("thead", {}, head), el("tbody", {}, body));
  const wrap = el("div", { class: options.keep === 2 ? "table-wrap keep-2" : "table-wrap" }, inner);
  const box = el("div", { class: "table-box" }, el("div", { class: "scroll-hint", "aria-hidden": "true" }), wrap);
  cueScroll(box, wrap, inner);
  return box;
}

// Marks `box` while `wrap` scrolls: "scrolls" (wider than its box), "more-left" and "more-right" (columns hidden past
// that edge); kept up to date as it scrolls, is resized, or shown. --key-left: where a second kept column sticks.
function cueScroll(box, wrap, inner) {
  const update = () => {
    const first = inner.querySelector("tr > :first-child");
    if (first) wrap.style.setProperty("--key-left", `${first.getBoundingClientRect().width}px`);
    const hidden = wrap.scrollWidth - wrap.clientWidth;
    box.classList.toggle("scrolls", hidden > 1);
    box.classList.toggle("more-left", hidden > 1 && wrap.scrollLeft > 1);
    box.classList.toggle("more-right", hidden > 1 && wrap.scrollLeft < hidden - 1);
  };
  wrap.addEventListener("scroll", update, { passive: true });
  const watcher = new ResizeObserver(update);
  watcher.observe(wrap);
  watcher.observe(inner);
}

// A score and its bar side by side, never the number on the bar: the number (fixed width), then a track that the
// bar fills to `percent`.
function scoreBar(score, percent) {
  const width = Math.max(0, Math.min(100, percent));
  return el("span", { class: "bar" }, el("span", { class: "value" }, fmt(score)),
    el("span", { class: "track", "aria-hidden": "true" }, el("span", { class: "fill", style: `width:${width.toFixed(1)}%` })));
}

function escape(text) {
  // plotly draws hover text as (a little) HTML: show <, > and & as themselves
  return String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

function words(text) {
  return text.split(/\s+/).map((w) => w.trim()).filter(Boolean);
}

function lines(text) {
  return text.split("\n").map((l) => l.trim()).filter(Boolean);
}

async function api(path, body) {
  const options = body === undefined ? {} : {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  };
  let response;
  try {
    response = await fetch(path, options);
  } catch (error) {
    throw Object.assign(new Error("The bertlens server does not answer."), { hint: "Is `bertlens serve` still running?" });
  }
  let data;
  try {
    data = await response.json();
  } catch (error) {
    throw new Error(`The server answered ${response.status} ${response.statusText} without JSON.`);
  }
  if (!response.ok) {
    throw Object.assign(new Error(data.message || `Error ${response.status}`), { hint: data.hint || "" });
  }
  return data;
}

function withModel(body) {
  return Object.assign({ model: state.model }, body);
}

function showError(section, error) {
  const box = $(".error", section);
  box.replaceChildren(el("strong", {}, error.message), error.hint ? el("span", { class: "hint" }, " " + error.hint) : null);
  box.hidden = false;
}

// The result area a form fills: the first `.result` after it in its section.
function resultOf(form) {
  for (let node = form.nextElementSibling; node; node = node.nextElementSibling) {
    if (node.classList.contains("result")) return node;
  }
  return null;
}

// Run `work` for a form: button disabled and a busy note while it runs, the error (if any) shown in the page and
// the form's previous result cleared (an answer to other inputs must not stand under the error).
async function busy(form, work) {
  const section = form.closest("section");
  const box = form.nextElementSibling && form.nextElementSibling.classList.contains("error") ? form.nextElementSibling : $(".error", section);
  const button = $("button[type=submit]", form);
  const label = button.textContent;
  box.hidden = true;
  button.disabled = true;
  button.textContent = "Working…";
  section.dataset.running = String(Number(section.dataset.running || 0) + 1);
  section.setAttribute("aria-busy", "true");
  try {
    await work();
    if (!performance.getEntriesByName("bertlens:view").length) performance.mark("bertlens:view"); // first view drawn
  } catch (error) {
    const result = resultOf(form);
    if (result) result.replaceChildren();
    if (form.id === "projection-form") {
      state.projection = null;
      $("#projection-toolbar").hidden = true;
      $("#projection-nearest").replaceChildren();
    }
    box.replaceChildren(el("strong", {}, error.message), error.hint ? el("span", { class: "hint" }, " " + error.hint) : null);
    box.hidden = false;
  } finally {
    button.disabled = false;
    button.textContent = label;
    section.dataset.running = String(Number(section.dataset.running) - 1);
    if (section.dataset.running === "0") section.removeAttribute("aria-busy");
  }
}

// plotly.min.js (4.6 MB, served from the installed plotly package) is loaded when a view first draws, or in idle
// time after the first view: the page itself does not wait for it.
let plotlyLoading = null;

function loadPlotly() {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  if (!plotlyLoading) {
    plotlyLoading = new Promise((resolve, reject) => {
      const script = el("script", { src: "/static/plotly.min.js" });
      script.addEventListener("load", () => {
        performance.mark("bertlens:plotly");
        resolve(window.Plotly);
      });
      script.addEventListener("error", () => {
        plotlyLoading = null;
        script.remove();
        reject(Object.assign(new Error("The plotting library (plotly.min.js) did not load."), { hint: "Is `bertlens serve` still running? Reload the page." }));
      });
      document.head.append(script);
    });
  }
  return plotlyLoading;
}

async function plot(container, traces, layout = {}, className = "") {
  await loadPlotly();
  const div = el("div", { class: `plot ${className}`.trim() });
  container.append(div);
  const base = {
    margin: { l: 60, r: 20, t: 40, b: 50 },
    paper_bgcolor: "rgba(0,0,0,0)",
    plot_bgcolor: "rgba(0,0,0,0)",
    font: { family: "system-ui, sans-serif", size: 12 },
  };
  Plotly.newPlot(div, traces, Object.assign(base, layout), PLOT_CONFIG);
  return div;
}

// ---------- views ----------

function showView(name) {
  if (!VIEWS.includes(name) || $(`nav [data-view=${name}]`).hidden) name = "tokens"; // Compare: two models or more
  for (const view of VIEWS) {
    $(`#view-${view}`).hidden = view !== name;
    $(`nav [data-view=${view}]`).setAttribute("aria-selected", String(view === name));
  }
  if (window.Plotly) for (const div of document.querySelectorAll(`#view-${name} .js-plotly-plot`)) Plotly.Plots.resize(div);
  if (!state.ran.has(name) && state.model !== null) {
    state.ran.add(name);
    if (name === "model") loadModel();
    if (name === "corpus") openCorpus(); // corpus.js: lists the indexes, then runs its forms
    else if (name === "compare") openCompare(); // compare.js: the two models' choices, then runs its form
    else for (const form of document.querySelectorAll(`#view-${name} form`)) form.requestSubmit();
  }
}

// Tokens

async function submitTokens(event) {
  event.preventDefault();
  const form = event.target;
  await busy(form, async () => {
    const data = await api("/api/tokens", withModel({
      text: form.text.value,
      pair: form.pair.value.trim() ? form.pair.value : null,
      add_special_tokens: form.add_special_tokens.checked,
    }));
    renderTokens(data);
  });
}

function renderTokens(data) {
  const out = $("#tokens-result");
  const chips = el("div", { class: "chips" }, data.tokens.map((t) =>
    el("span", {
      class: `chip${t.special ? " special" : ""}${t.segment ? " segment1" : ""}`,
      title: `piece ${visible(t.piece)} · id ${t.id} · chars ${t.start}:${t.end} · segment ${t.segment}`,
    }, el("span", { class: "piece" }, visible(t.piece)), el("span", { class: "id" }, t.id))));
  const rows = data.tokens.map((t) => [t.index, visible(t.piece), t.id, `${t.start}:${t.end}`, t.word, t.sequence, t.segment, t.special ? "yes" : ""]);
  const note = `${data.tokens.length} tokens; the model takes at most ${fmt(data.max_length)}.` +
    (data.exceeds_max_length ? " Too long: the model cannot take this input whole (nothing was cut here)." : "");
  const legend = "Blue: pieces of your text; grey: special tokens" + (data.pair !== null ? "; orange: the pair (segment 1)." : ".");
  out.replaceChildren(chips, el("p", { class: "note" }, legend), el("p", { class: data.exceeds_max_length ? "warn" : "note" }, note),
    table(["#", "piece", "id", "chars", "word", "sequence", "segment", "special"], rows, { keep: 2 }));
}

// Embedding layer

async function submitEmbedding(event) {
  event.preventDefault();
  const form = event.target;
  await busy(form, async () => {
    const data = await api("/api/explain", withModel({
      text: form.text.value,
      pair: form.pair.value.trim() ? form.pair.value : null,
      check: true,
    }));
    await renderEmbedding(data);
  });
}

function norm(vector) {
  if (!vector) return null;
  let s = 0;
  for (const v of vector) s += v * v;
  return Math.sqrt(s);
}

async function renderEmbedding(data) {
  const out = $("#embedding-result");
  // The check in plain words first (its one number is the largest in the table's max diff column, written the same
  // way, and what computed the model's side); the technical detail (what ran, float32 steps) folded under it.
  const passed = data.checked && data.max_abs_diff === 0;
  const verdict = data.checked
    ? el("div", { class: "check" },
      el("p", { class: passed ? "ok" : "warn" }, passed ? "✓ " : "✗ ", data.check_summary),
      el("details", { class: "detail" }, el("summary", {}, "Technical detail"),
        el("p", { class: "note" }, data.check_detail.replace(/^Detail: /, ""))))
    : el("p", { class: "note" }, "Not checked against the model.");
  const recipe = el("div", { class: "recipe" },
    el("pre", {}, `${data.family}: ${data.formula}`),
    el("ol", {}, data.steps.map((s) => el("li", {}, s))),
    data.absent_parts.length ? el("ul", { class: "absent" }, data.absent_parts.map((a) => el("li", {}, "absent: " + a))) : null,
    data.notes.length ? el("ul", { class: "notes" }, data.notes.map((n) => el("li", {}, n))) : null);
  const labels = data.tokens.map((t) => `${t.index} ${visible(t.piece)}`);
  const narrow = $("#embedding-result").clientWidth < 600; // a phone: band titles short enough for the band's width
  const parts = [
    ["word_row", narrow ? "word rows" : "word_embeddings[id]"],
    ["position_row", narrow ? "+ position rows" : "+ position_embeddings[position]"],
    ["token_type_row", narrow ? "+ token-type rows" : "+ token_type_embeddings[segment]"],
    ["sum", "= sum"],
    ["projected", "projected"],
    ["layer_norm_output", "LayerNorm(sum)"],
    ["output", narrow ? "output" : "output (hidden_states[0])"],
  ].filter(([key]) => data.tokens.length && data.tokens[0][key] !== null && data.tokens[0][key] !== undefined);
  // BERT-like: the output is the LayerNorm output; draw it once
  const same = data.tokens.every((t) => t.output.length === t.layer_norm_output.length && t.output.every((v, i) => v === t.layer_norm_output[i]));
  const shown = parts.filter(([key]) => !(same && key === "output"));
  const picture = el("div", { class: "picture" });
  out.replaceChildren(verdict, recipe, el("h3", {}, "The parts, token by token"),
    el("p", { class: "note" }, "Each band is one part; each row a token, each column a dimension. The word row is the same for a token wherever it stands; the position row changes with its place; LayerNorm rescales the sum. The rows and their sum share one colour scale (so the bands compare), the normalised steps another; each scale is cut at the 99th percentile of its |values| (red positive, blue negative)."),
    picture,
    table(["#", "piece", "id", "position", "segment", "|word|", "|position|", "|type|", "|sum|", "LN mean", "LN std", "|output|", "max diff"],
      data.tokens.map((t) => [t.index, visible(t.piece), t.id, t.position_id, t.token_type_id, norm(t.word_row), norm(t.position_row), norm(t.token_type_row), norm(t.sum), t.layer_norm_mean, t.layer_norm_std, norm(t.output), t.max_abs_diff]),
      { format: cell, class: "layer-table" }));
  const band = 22 * labels.length + 40;
  const traces = [];
  const layout = { height: shown.length * band + 60, margin: { l: 110, r: 20, t: 20, b: 40 }, showlegend: false, annotations: [] };
  // Bands that are compared share one colour scale: the three rows and their sum (the sum is read against its
  // parts), and the normalised steps after them. Each scale is clipped at the 99th percentile of its |values| (a few
  // outlying dimensions would wash out the rest) and has its colour bar beside its bands.
  const groups = [["word_row", "position_row", "token_type_row", "sum"], ["projected", "layer_norm_output", "output"]];
  const groupOf = (key) => (groups[0].includes(key) ? 0 : 1);
  const limits = groups.map((keys) => {
    const magnitudes = shown.filter(([key]) => keys.includes(key)).flatMap(([key]) => data.tokens.flatMap((t) => t[key])).map(Math.abs).sort((a, b) => a - b);
    return magnitudes.length ? magnitudes[Math.floor(0.99 * (magnitudes.length - 1))] || 1 : 1;
  });
  const spans = [[], []];
  shown.forEach(([key, title], i) => {
    const top = 1 - i / shown.length;
    const bottom = 1 - (i + 1) / shown.length;
    const axis = i === 0 ? "" : String(i + 1);
    const group = groupOf(key);
    spans[group].push(bottom, top);
    traces.push({
      type: "heatmap", z: data.tokens.map((t) => t[key]), y: labels, xaxis: "x" + axis, yaxis: "y" + axis,
      coloraxis: group === 0 ? "coloraxis" : "coloraxis2",
      hovertemplate: `${title}<br>%{y}<br>dimension %{x}: %{z:.4f}<extra></extra>`,
    });
    const last = i === shown.length - 1; // only the lowest band has dimension ticks (the others' would touch a title)
    layout["xaxis" + axis] = { domain: [0, 1], anchor: "y" + axis, showticklabels: last, ticks: last ? "outside" : "", title: last ? { text: "dimension" } : undefined };
    layout["yaxis" + axis] = { domain: [bottom + 0.03 / shown.length * 4, top - 0.02], anchor: "x" + axis, autorange: "reversed", tickfont: { size: 11 } };
    layout.annotations.push({ text: `<b>${title}</b>`, xref: "paper", yref: "paper", x: 0, y: top, xanchor: "left", yanchor: "bottom", showarrow: false, font: { size: 12 } });
  });
  const names = ["rows and sum", "normalised"];
  groups.forEach((_, g) => {
    if (!spans[g].length) return;
    const low = Math.min(...spans[g]);
    const high = Math.max(...spans[g]);
    layout[g === 0 ? "coloraxis" : "coloraxis2"] = {
      colorscale: DIVERGING, cmin: -limits[g], cmax: limits[g],
      colorbar: { title: { text: names[g], side: "right" }, y: (low + high) / 2, len: Math.max(0.15, (high - low) * 0.95), thickness: 12, x: 1.01, xanchor: "left" },
    };
  });
  layout.margin.r = 90;
  await plot(picture, traces, layout);
}

async function submitPositions(event) {
  event.preventDefault();
  const form = event.target;
  await busy(form, async () => {
    const limit = form.limit.value.trim();
    const query = new URLSearchParams({ model: state.model });
    if (limit) query.set("limit", limit);
    await renderPositions(await api(`/api/positions?${query}`));
  });
}

async function renderPositions(data) {
  const out = $("#positions-result");
  const first = data.first_position;
  out.replaceChildren(el("p", { class: "note" }, `${data.family}: the first ${fmt(data.rows)} of ${fmt(data.table_rows)} position rows; cosine of row i with row j.`));
  await plot(out, [{
    type: "heatmap", z: data.cosine, colorscale: DIVERGING, zmin: -1, zmax: 1,
    colorbar: { title: { text: "cosine", side: "right" }, thickness: 12 },
    hovertemplate: "position %{y} vs %{x}: cosine %{z:.3f}<extra></extra>",
  }], {
    height: 520, xaxis: { title: { text: "position j" }, constrain: "domain" },
    yaxis: { title: { text: "position i" }, autorange: "reversed", scaleanchor: "x" }, margin: { l: 60, r: 20, t: 20, b: 50 },
  }, "square");
  if (data.token_types) {
    out.append(el("h4", {}, "token_type_embeddings rows"),
      table(["segment", "norm", ...data.token_types.map((_, i) => `cosine with ${i}`)],
        data.token_types.map((row, i) => [i, data.token_type_norms[i], ...row])));
  }
  for (const note of data.notes) out.append(el("p", { class: "note" }, note));
  if (first) out.append(el("p", { class: "note" }, `A text's first token uses row ${first}.`));
}

// Similar tokens

function similarRequest(form) {
  const positive = words(form.positive.value);
  const negative = words(form.negative.value);
  const expression = positive.length + negative.length > 0;
  return withModel({
    queries: expression ? [] : words(form.queries.value),
    id: form.id.checked,
    positive, negative,
    k: Number(form.k.value || 10),
    metric: form.metric.value,
    pool: form.pool.value,
    center: form.center.checked,
    remove_top: Number(form.remove_top.value || 0),
    words_only: form.words_only.checked,
    no_pieces: form.no_pieces.checked,
    no_numbers: form.no_numbers.checked,
    no_punctuation: form.no_punctuation.checked,
    specials: form.specials.checked,
    unused: form.unused.checked,
  });
}

async function submitSimilar(event) {
  event.preventDefault();
  const form = event.target;
  await busy(form, async () => renderSimilar(await api("/api/neighbors", similarRequest(form))));
}

function lookUp(token) {
  const form = $("#similar-form");
  form.queries.value = token;
  form.positive.value = "";
  form.negative.value = "";
  form.id.checked = false;
  form.requestSubmit();
}

function renderSimilar(data) {
  const out = $("#similar-result");
  out.replaceChildren();
  for (const result of data.results) {
    const adjusted = result.adjustment !== "none";
    const euclidean = result.metric === "euclidean";
    const best = Math.max(1e-9, ...result.neighbors.map((n) => Math.abs(n.score)));
    const rows = result.neighbors.map((n) => {
      const width = euclidean ? 100 * (1 - n.score / (best * 1.05)) : 100 * Math.max(0, n.score) / best;
      const bar = scoreBar(n.score, width);
      const token = el("button", { type: "button", class: "link", title: `look up ${visible(n.token)}`, onclick: () => lookUp(n.token) }, visible(n.token));
      return [n.rank, n.id, token, bar, ...(adjusted ? [n.raw_score] : [])];
    });
    const scoreName = euclidean ? "distance (smaller is nearer)" : result.metric + (adjusted ? " (adjusted)" : "");
    const pieces = result.pieces.length ? result.pieces.map(visible).join(" ") : "–";
    out.append(el("div", { class: "neighbors" },
      el("h3", {}, `${visible(result.query)}`, el("span", { class: "kind" }, ` ${result.kind}; pieces: ${pieces}`)),
      table(["rank", "id", "token", scoreName, ...(adjusted ? ["raw"] : [])], rows, { class: "neighbors-table" }),
      [result.note, ...(result.notes || [])].filter(Boolean).map((note) => el("p", { class: "note pooled" }, note)),
      result.metric === "cosine" ? el("p", { class: "note" }, `Baseline: random pairs of these tokens have mean cosine ${fmt(result.baseline, 3)} in this space; that is what an unrelated token scores here.`) : null,
      adjusted ? el("p", { class: "note" }, `Adjusted space: ${result.adjustment}; raw scores beside.`) : null,
      result.neighbors.length < result.k ? el("p", { class: "warn" }, `Only ${result.neighbors.length} tokens pass these filters.`) : null));
  }
}

// Context

async function submitContext(event) {
  event.preventDefault();
  const form = event.target;
  await busy(form, async () => {
    const body = { word: form.word.value, sentences: lines(form.sentences.value) };
    const comparison = await api("/api/context", withModel(Object.assign({ pool: form.pool.value }, body)));
    const path = await api("/api/trajectory", withModel(Object.assign({ method: form.method.value, dims: 2 }, body)));
    await renderContext(comparison, path);
  });
}

const DASHES = ["solid", "dash", "dot", "dashdot", "longdash", "longdashdot"];

async function renderContext(data, path) {
  const out = $("#context-result");
  const places = table(["#", "sentence", "chars", "pieces"], data.occurrences.map((o, i) =>
    [i, data.sentences[o.sentence], `${o.start}:${o.end}`, o.pieces.map(visible).join(" ")]));
  const charts = el("div", { class: "two" });
  out.replaceChildren(el("h3", {}, `“${data.word}” in ${data.sentences.length} sentences (${data.occurrences.length} occurrences)`), places, charts);
  const left = el("div");
  const right = el("div");
  charts.append(left, right);
  const x = data.layers.map((l) => (l.layer === "input matrix" ? "input" : String(l.layer)));
  const line = (name, key, colour, dash, symbol) => ({
    x, y: data.layers.map((l) => (typeof l[key] === "number" ? l[key] : null)), name, mode: "lines+markers",
    line: { color: colour, dash, width: 2 }, marker: { symbol, size: 8, color: colour },
    hovertemplate: `${name}<br>layer %{x}: %{y:.3f}<extra></extra>`,
  });
  const curves = [
    line("mean cosine (this word)", "mean_cosine", "#1f77b4", "solid", "circle"),
    line("lowest cosine (this word)", "min_cosine", "#ff7f0e", "dash", "square"),
  ];
  const baseline = data.layers.some((l) => typeof l.baseline === "number");
  if (baseline) curves.push(line("unrelated words (baseline)", "baseline", "#7f7f7f", "dot", "diamond"));
  const values = curves.flatMap((c) => c.y).filter((v) => v !== null);
  await plot(left, curves, {
    title: { text: "Similarity of the word across sentences", font: { size: 14 } },
    yaxis: { title: { text: "cosine" }, range: [Math.min(0, ...values) - 0.02, 1.02], zeroline: true },
    xaxis: { automargin: true, type: "category", title: { text: "layer (input = the input matrix's row)" } }, legend: { orientation: "h", y: -0.25, yanchor: "top" }, height: 420, margin: { l: 60, r: 20, t: 40, b: 110 },
  });
  // each sentence's path: a line (its own dash, so overlapping paths stay apart) whose markers are arrowheads
  // pointing from one layer to the next; the layer numbers written once per layer, where that layer's points lie
  const traces = path.sentences.map((sentence, s) => ({
    type: "scatter", mode: "lines+markers",
    x: path.points[s].map((p) => p[0]), y: path.points[s].map((p) => p[1]),
    line: { dash: DASHES[s % DASHES.length], width: 2 }, opacity: 0.9,
    marker: { symbol: path.layers.map((_, i) => (i === 0 ? "circle" : "arrow")), angleref: "previous", size: path.layers.map((_, i) => (i === 0 ? 8 : 12)) },
    name: `#${s}: ${sentence.length > 40 ? sentence.slice(0, 39) + "…" : sentence}`,
    hovertext: path.layers.map((l) => escape(`sentence ${s}, layer ${l}: ${sentence}`)), hoverinfo: "text",
  }));
  const mean = (l, d) => path.points.reduce((sum, points) => sum + points[l][d], 0) / path.points.length;
  traces.push({
    type: "scatter", mode: "text", name: "layer", showlegend: false, hoverinfo: "skip",
    x: path.layers.map((_, l) => mean(l, 0)), y: path.layers.map((_, l) => mean(l, 1)),
    text: path.layers.map((l) => `<b>${l}</b>`), textposition: "middle left", textfont: { size: 13, color: "#1d2330" },
  });
  const axis = (i) => (path.explained ? `PC${i + 1} (${(100 * path.explained[i]).toFixed(1)}%)` : `${METHOD_NAMES[path.method] || path.method} ${i + 1}`);
  await plot(right, traces, {
    title: { text: "Trajectory through the layers (one shared projection)", font: { size: 14 } },
    xaxis: { title: { text: axis(0) } }, yaxis: { title: { text: axis(1) } },
    legend: { orientation: "h", y: -0.22, yanchor: "top" }, height: 420, margin: { l: 60, r: 20, t: 40, b: 110 },
  });
  out.append(el("p", { class: "note" }, "Numbers on the trajectory are layers (0 = the embedding layer's output), written once where that layer's points lie; arrowheads point from each layer to the next. At the input matrix the word has one row (cosine 1 by construction); layer 0 differs only by position and segment rows; from layer 1 on, the context moves the vector." +
    (baseline ? " The grey dotted line is the mean cosine of unrelated words at each layer: the word's own cosines mean something only above it." : "")));
}

// Projection

// The method each kind of points is best seen with, until the user picks one: t-SNE lays the word groups out as
// islands (168 points: about a second); PCA is exact and fast on thousands of points.
const SUGGESTED_METHOD = { groups: "tsne", tokens: "pca", contextual: "pca" };
const METHOD_NAMES = { pca: "PCA", tsne: "t-SNE", umap: "UMAP" };

function syncProjectionSource(form) {
  for (const label of form.querySelectorAll("[data-source]")) label.hidden = label.dataset.source !== form.source.value;
  if (!form.method.dataset.chosen) form.method.value = SUGGESTED_METHOD[form.source.value];
}

async function submitProjection(event) {
  event.preventDefault();
  const form = event.target;
  await busy(form, async () => {
    const body = { source: form.source.value, method: form.method.value, dims: Number(form.dims.value) };
    if (body.source === "tokens") {
      const tokens = words(form.tokens.value);
      if (tokens.length) body.tokens = tokens;
      else {
        const words = state.models.find((m) => m.name === state.model).whole_words;
        body.count = Math.min(Number(form.count.value || words), words); // a small vocabulary has fewer
      }
    } else if (body.source === "contextual") {
      body.texts = lines(form.texts.value);
      body.layer = Number(form.layer.value || -1);
      body.level = form.level.value;
    }
    const started = performance.now();
    const data = await api("/api/projection", withModel(body));
    // which points get a written label, in order of preference: every point of a small answer (groups taken in
    // turn, so each group gets its share), else the featured words of a count (those nearest each theme's centre)
    // or the first (most frequent) ones; a label is written only where it overlaps no other label or point
    const n = data.labels.length;
    let candidates;
    let most = LABELLED;
    if (body.source === "groups" || n <= SMALL) {
      candidates = body.source === "groups" ? byTurns(data.metadata.group) : [...Array(n).keys()];
      most = n;
    } else if (data.featured && data.featured.length) candidates = [...data.featured, ...Array(Math.min(n, LABEL_FROM)).keys()];
    else candidates = body.count ? [...Array(Math.min(n, LABEL_FROM)).keys()] : [];
    state.projection = { data, seconds: (performance.now() - started) / 1000, candidates: [...new Set(candidates)], most };
    const colour = $("#projection-colour");
    const columns = Object.keys(data.metadata);
    const preferred = ["group", "theme", "sentence", "label"].find((c) => columns.includes(c)) || "";
    colour.replaceChildren(el("option", { value: "" }, "(one colour)"), ...columns.map((c) => el("option", { value: c }, c)));
    colour.value = preferred;
    $("#projection-toolbar").hidden = false;
    await renderProjection();
  });
}

const SMALL = 300; // answers of at most this many points: every point is a label candidate
const LABELLED = 40; // larger answers get at most 40 written labels…
const LABEL_FROM = 400; // …from their featured points, then their first 400 (for a count: the most frequent words)
const LABELS_3D = 24; // in 3-D: two words of each of twelve groups, or a count's featured words

// Indices ordered so that groups take turns: the first of each group, then the second of each, and so on.
function byTurns(groups) {
  const members = new Map();
  groups.forEach((g, i) => (members.has(g) ? members.get(g).push(i) : members.set(g, [i])));
  const lists = [...members.values()];
  const order = [];
  for (let r = 0; order.length < groups.length; r++) for (const list of lists) if (r < list.length) order.push(list[r]);
  return order;
}

// Twenty colours for categories: tab10, then near-black and navy (twelve told apart on white), then darker tones.
const PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
  "#17becf", "#1a1a1a", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#5254a3", "#8ca252", "#bd9e39", "#ad494a"];
const LABEL_FONT = { size: 12, color: "#1d2330", family: "system-ui, sans-serif" };
const LABEL_SIDES_2D = [ // where a label may sit around its point: plotly's textposition, and the box's offset (px)
  ["top center", (w, h) => [-w / 2, -h - 5]], ["bottom center", (w, h) => [-w / 2, 5]],
  ["middle right", (w, h) => [6, -h / 2]], ["middle left", (w, h) => [-w - 6, -h / 2]],
  ["top right", (w, h) => [3, -h - 3]], ["top left", (w, h) => [-w - 3, -h - 3]],
  ["bottom right", (w, h) => [3, 3]], ["bottom left", (w, h) => [-w - 3, 3]],
];

// Which candidates get a label, and where: in order, each at the first side where its box (measured in the label
// font) stays inside the plot and overlaps no label placed before it and, for answers of at most SMALL points, no
// other point. Returns [index, textposition] pairs. Works on the plot's current axis ranges (zoomed or not).
function placeLabels(div, points, labels, candidates, most) {
  const layout = div._fullLayout;
  const { w: width, h: height } = layout._size;
  const [x0, x1] = layout.xaxis.range;
  const [y0, y1] = layout.yaxis.range;
  const pixel = (p) => [((p[0] - x0) / (x1 - x0)) * width, (1 - (p[1] - y0) / (y1 - y0)) * height];
  const context = document.createElement("canvas").getContext("2d");
  context.font = `${LABEL_FONT.size}px ${LABEL_FONT.family}`;
  const dots = points.length <= SMALL ? points.map(pixel) : [];
  const boxes = [];
  const placed = [];
  const overlaps = (a, b) => a[0] < b[2] && b[0] < a[2] && a[1] < b[3] && b[1] < a[3];
  for (const i of candidates) {
    if (placed.length >= most) break;
    const [x, y] = pixel(points[i]);
    if (x < 0 || x > width || y < 0 || y > height) continue; // zoomed out of view
    const w = context.measureText(labels[i]).width + 4; // 2 px of air each side
    const h = LABEL_FONT.size + 4;
    for (const [side, offset] of LABEL_SIDES_2D) {
      const [dx, dy] = offset(w, h);
      const box = [x + dx, y + dy, x + dx + w, y + dy + h];
      if (box[0] < 0 || box[1] < 0 || box[2] > width || box[3] > height) continue;
      if (boxes.some((b) => overlaps(box, b))) continue;
      if (dots.some((d, j) => j !== i && overlaps(box, [d[0] - 3, d[1] - 3, d[0] + 3, d[1] + 3]))) continue;
      boxes.push(box);
      placed.push([i, side]);
      break;
    }
  }
  return placed;
}

// The label traces' contents for the placed labels, one trace per legend group (so that hiding a group in the
// legend hides its labels too).
function labelUpdate(div, placed) {
  const { data } = state.projection;
  const update = { x: [], y: [], text: [], textposition: [] };
  const indices = [];
  div.data.forEach((trace, t) => {
    if (trace.name !== "labels") return;
    const members = new Set(trace.members);
    const mine = placed.filter(([i]) => members.has(i));
    update.x.push(mine.map(([i]) => data.points[i][0]));
    update.y.push(mine.map(([i]) => data.points[i][1]));
    update.text.push(mine.map(([i]) => visible(data.labels[i])));
    update.textposition.push(mine.map(([, side]) => side));
    indices.push(t);
  });
  return [update, indices];
}

// The boxes plotly drew for the label traces' texts: point index -> [left, top, right, bottom] (page pixels).
function drawnLabels(div, placed) {
  const boxes = new Map();
  for (const group of div.querySelectorAll(".scatterlayer .trace")) {
    const trace = group.__data__ && group.__data__[0] && group.__data__[0].trace;
    if (!trace || trace.name !== "labels") continue;
    const members = new Set(div.data[trace.index].members); // the user's trace: plotly's full one drops `members`
    const mine = placed.filter(([i]) => members.has(i));
    group.querySelectorAll(".textpoint text").forEach((text, k) => {
      const r = text.getBoundingClientRect();
      if (k < mine.length) boxes.set(mine[k][0], [r.left, r.top, r.right, r.bottom]);
    });
  }
  return boxes;
}

function relabel(div) {
  const { data, candidates = [], most = 0, priority = [] } = state.projection;
  const show = (placed) => {
    const [update, indices] = labelUpdate(div, placed);
    if (indices.length) Plotly.restyle(div, update, indices);
  };
  const order = [...new Set([...priority, ...candidates])]; // a clicked point and its nearest first
  let placed = placeLabels(div, data.points, data.labels.map(visible), order, Math.max(most, priority.length));
  show(placed);
  // plotly puts a text a pixel or two from the estimate: a label whose drawn box meets one placed before it, or
  // leaves the plot, is dropped
  const area = div.querySelector(".nsewdrag");
  if (area && placed.length) {
    const bounds = area.getBoundingClientRect();
    const drawn = drawnLabels(div, placed);
    const kept = [];
    const boxes = [];
    const meets = (a, b) => a[0] < b[2] && b[0] < a[2] && a[1] < b[3] && b[1] < a[3];
    for (const entry of placed) {
      const box = drawn.get(entry[0]);
      if (box && (box[0] < bounds.left || box[2] > bounds.right || box[1] < bounds.top || box[3] > bounds.bottom)) continue;
      if (box && boxes.some((other) => meets(box, other))) continue;
      if (box) boxes.push(box);
      kept.push(entry);
    }
    if (kept.length < placed.length) {
      placed = kept;
      show(placed);
    }
  }
  div.dataset.labelled = String(placed.length);
  state.projection.placed = new Set(placed.map(([i]) => i));
  return placed.length;
}

async function renderProjection() {
  const { data, seconds, candidates = [], most = 0 } = state.projection; // no candidates: no labels
  state.projection.priority = [];
  const out = $("#projection-result");
  out.replaceChildren();
  const n = data.labels.length;
  const three = data.dims === 3;
  const columns = Object.keys(data.metadata);
  const hover = data.labels.map((label, i) => [visible(label), ...columns.map((c) => `${c}: ${data.metadata[c][i] ?? "–"}`)].map(escape).join("<br>"));
  const colourBy = $("#projection-colour").value;
  const size = n > 20000 ? 2.5 : n > 2000 ? 4 : n > SMALL ? 6 : 8;
  const type = three ? "scatter3d" : n > 3000 ? "scattergl" : "scatter"; // SVG for fewer points: crisper, and text
  const coordinates = (indices) => {
    const trace = { x: indices.map((i) => data.points[i][0]), y: indices.map((i) => data.points[i][1]) };
    if (three) trace.z = indices.map((i) => data.points[i][2]);
    return trace;
  };
  const all = [...Array(n).keys()];
  // in 3-D, where labels cannot be kept apart (the view turns), only the first LABELS_3D candidates are written
  const chosen = new Set(candidates.slice(0, Math.min(most, LABELS_3D)));
  const traces = [];
  const base = (indices) => Object.assign(coordinates(indices), {
    type, mode: "markers", hovertext: indices.map((i) => hover[i]), hoverinfo: "text",
    marker: { size, opacity: n > 5000 ? 0.6 : 0.9, line: n <= SMALL ? { width: 0.5, color: "#fff" } : undefined },
    customdata: indices, // the point's index in the answer: a click finds its nearest points by it
  });
  // labels: in 2-D a trace per group, filled once the plot's axes are known (placeLabels); in 3-D the candidates
  const labelTrace = (indices, group) => Object.assign(coordinates(three ? indices.filter((i) => chosen.has(i)) : []), {
    type: three ? "scatter3d" : "scatter", mode: "text", name: "labels", legendgroup: group, showlegend: false,
    text: three ? indices.filter((i) => chosen.has(i)).map((i) => visible(data.labels[i])) : [],
    textposition: "top center", textfont: LABEL_FONT, hoverinfo: "skip", members: indices,
  });
  const values = colourBy ? data.metadata[colourBy] : null;
  const categories = values ? [...new Set(values.map(String))] : [];
  // the legend in the groups' own order; other columns in natural order (theme 0, theme 1, …, sentence 2, sentence 10)
  if (colourBy !== "group") categories.sort((a, b) => a.localeCompare(b, "en", { numeric: true }));
  const named = ["group", "theme"].includes(colourBy); // their values say what they are
  if (values && categories.length <= PALETTE.length) {
    categories.forEach((category, c) => {
      const indices = all.filter((i) => String(values[i]) === category);
      const trace = base(indices);
      trace.name = named ? category : `${colourBy} ${category}`;
      trace.legendgroup = category;
      trace.marker.color = PALETTE[c % PALETTE.length];
      traces.push(trace, labelTrace(indices, category));
    });
  } else {
    const trace = base(all);
    trace.name = "points";
    if (values) {
      const numeric = values.every((v) => typeof v === "number");
      const codes = numeric ? values : values.map((v) => categories.indexOf(String(v)));
      Object.assign(trace.marker, { color: codes, colorscale: "Viridis", showscale: numeric, colorbar: numeric ? { title: { text: colourBy } } : undefined });
    }
    traces.push(trace, labelTrace(all, "points"));
  }
  const axis = (i) => (data.explained ? `PC${i + 1} (${(100 * data.explained[i]).toFixed(1)}% of variance)` : `${METHOD_NAMES[data.method] || data.method} ${i + 1}`);
  const legend = traces.filter((t) => t.showlegend !== false).length > 1;
  const layout = {
    height: 640, hovermode: "closest", showlegend: legend, margin: { l: 60, r: 20, t: 30, b: 60 },
    legend: { orientation: "h", y: -0.14, yanchor: "top", itemclick: "toggle", itemdoubleclick: "toggleothers" },
  };
  if (legend) layout.margin.b = 130;
  if (three) layout.scene = { xaxis: { title: { text: axis(0) } }, yaxis: { title: { text: axis(1) } }, zaxis: { title: { text: axis(2) } } };
  else {
    // ranges padded by 6 % each side: room for the labels of the outermost points
    const range = (d) => {
      const v = data.points.map((p) => p[d]);
      const [low, high] = [Math.min(...v), Math.max(...v)];
      const pad = 0.06 * (high - low || 1);
      return [low - pad, high + pad];
    };
    Object.assign(layout, { xaxis: { title: { text: axis(0) }, range: range(0), zeroline: false }, yaxis: { title: { text: axis(1) }, range: range(1), zeroline: false }, dragmode: "zoom" });
  }
  const div = await plot(out, traces, layout);
  div.dataset.points = String(n);
  div.on("plotly_click", (event) => {
    const point = event.points.find((p) => typeof p.customdata === "number");
    if (point) showNearest(point.customdata);
  });
  const labelled = three ? chosen.size : relabel(div);
  if (!three) div.on("plotly_relayout", () => relabel(div)); // zoomed or reset: room for other labels
  div.dataset.labelled = String(labelled);
  const kind = named ? ` Colours are the ${colourBy}s: click one in the legend to hide it, double-click to show it alone.` : "";
  const written = labelled ? ` ${labelled} of the ${n.toLocaleString("en")} points are labelled${labelled >= n ? "" : three ? " (hover for the others)" : " (where a label would cover another, hover for the word; zoom in for more)"}.` : "";
  const clicks = data.nearest ? " Click a point for its nearest points in the original space." : "";
  out.append(el("p", { class: "note" }, `${data.title}. ${n.toLocaleString("en")} points (every one drawn), ${METHOD_NAMES[data.method] || data.method} to ${data.dims} dimensions, ${seconds.toFixed(1)} s.${kind}${written}${clicks}`));
  $("#projection-nearest").replaceChildren();
  searchProjection();
}

// The clicked point's nearest points by cosine in the original space (from the answer's `nearest`), listed and ringed.
function showNearest(index) {
  const box = $("#projection-nearest");
  const div = $("#projection-result .js-plotly-plot");
  if (!state.projection || !div) return;
  const { data } = state.projection;
  const existing = div.data.findIndex((t) => t.name === "nearest");
  if (existing >= 0) Plotly.deleteTraces(div, existing);
  const label = visible(data.labels[index]);
  if (!data.nearest) {
    box.replaceChildren(el("p", { class: "note" }, `“${label}”: nearest points are computed for projections of at most 10,000 points.`));
    return;
  }
  const near = data.nearest[index];
  const cosines = data.nearest_cosine[index];
  const rows = near.map((j, r) => [r + 1, el("button", { type: "button", class: "link", onclick: () => showNearest(j) }, visible(data.labels[j])), cosines[r]]);
  box.replaceChildren(el("h3", {}, `Nearest to “${label}” in the original space`),
    el("p", { class: "note" }, `Cosine between the vectors themselves (${data.labels.length.toLocaleString("en")} points shown), not the distance on the map; ringed in green on the map. Click a word to follow it.`),
    table(["rank", "point", "cosine"], rows));
  const three = data.dims === 3;
  const chosen = [index, ...near];
  const trace = {
    type: three ? "scatter3d" : "scatter", mode: three ? "markers+text" : "markers", name: "nearest",
    x: chosen.map((i) => data.points[i][0]), y: chosen.map((i) => data.points[i][1]),
    text: chosen.map((i) => visible(data.labels[i])), // written in 3-D; in 2-D the map's labels take them first
    hovertext: chosen.map((i) => escape(visible(data.labels[i]))), textposition: "top center", hoverinfo: "text",
    showlegend: false, textfont: { color: "#1b7a3d" },
    marker: { size: chosen.map((_, r) => (r === 0 ? 16 : 12)), color: "rgba(0,0,0,0)", line: { color: "#1b7a3d", width: 3 } },
  };
  if (three) trace.z = chosen.map((i) => data.points[i][2]);
  Plotly.addTraces(div, trace);
  if (!three) {
    state.projection.priority = chosen;
    relabel(div);
  }
}

function searchProjection() {
  const found = $("#projection-found");
  const div = $("#projection-result .js-plotly-plot");
  if (!state.projection || !div) return;
  const { data } = state.projection;
  const query = $("#projection-search").value.trim().toLowerCase();
  const three = data.dims === 3;
  const existing = div.data.findIndex((t) => t.name === "found");
  if (existing >= 0) Plotly.deleteTraces(div, existing);
  if (state.projection.found && !three) { // the words found before no longer come first
    state.projection.found = false;
    state.projection.priority = [];
    if (!query) relabel(div);
  }
  if (!query) {
    found.textContent = "";
    return;
  }
  let matches = data.labels.map((l, i) => [String(l).toLowerCase(), i]).filter(([l]) => l === query).map(([, i]) => i);
  if (!matches.length) matches = data.labels.map((l, i) => [String(l).toLowerCase(), i]).filter(([l]) => l.startsWith(query)).map(([, i]) => i);
  if (!matches.length) {
    found.textContent = `No point is labelled “${query}”.`;
    return;
  }
  matches = matches.slice(0, 200);
  found.textContent = `${matches.length} point${matches.length > 1 ? "s" : ""} found (ringed in red${data.dims === 2 ? "; zoomed to the first" : ""}).`;
  const trace = { // in 2-D the map's labels write the words found first (the zoom below relabels)
    type: three ? "scatter3d" : "scatter", mode: three ? "markers+text" : "markers", name: "found",
    x: matches.map((i) => data.points[i][0]), y: matches.map((i) => data.points[i][1]),
    text: matches.map((i) => visible(data.labels[i])), textposition: "top center", hoverinfo: "text",
    marker: { size: 14, color: "rgba(0,0,0,0)", line: { color: "#d62728", width: 3 } },
  };
  if (three) trace.z = matches.map((i) => data.points[i][2]);
  Plotly.addTraces(div, trace);
  if (!three) {
    state.projection.found = true;
    state.projection.priority = matches.slice(0, LABELLED);
    const xs = data.points.map((p) => p[0]);
    const ys = data.points.map((p) => p[1]);
    const spanX = (Math.max(...xs) - Math.min(...xs)) / 12;
    const spanY = (Math.max(...ys) - Math.min(...ys)) / 12;
    const [x, y] = data.points[matches[0]];
    Plotly.relayout(div, { "xaxis.range": [x - spanX, x + spanX], "yaxis.range": [y - spanY, y + spanY] });
  }
}

// What the server still prepares in the background (GET /api/status): each model's similar-token table, built once
// after the server starts (then cached). The Similar-tokens view says so with its progress, polled until it is ready;
// its answers meanwhile come from a scan of the matrix (the same tokens).

const STATUS_EVERY = 1000; // ms between polls while something is being prepared

async function watchStatus() {
  try {
    state.status = await api("/api/status");
  } catch (error) {
    setTimeout(watchStatus, 5 * STATUS_EVERY); // the server is busy or gone: ask again later
    return;
  }
  showStatus();
  if (state.status.preparing) setTimeout(watchStatus, STATUS_EVERY);
}

function tableOf(name) {
  const found = state.status && state.status.models.find((m) => m.name === name);
  return found ? found.neighbor_table : null;
}

function describeTable(table) {
  if (!table) return "–";
  if (table.state === "waiting" || table.state === "preparing") return `preparing… ${Math.floor(100 * table.progress)} %`;
  if (table.state === "off") return "none (scans)";
  return table.state;
}

function showStatus() {
  const line = $("#similar-preparing");
  const table = tableOf(state.model);
  if (!table) return;
  const preparing = table.state === "waiting" || table.state === "preparing";
  if (preparing) {
    state.prepared.add(state.model);
    line.className = "note preparing";
    line.replaceChildren(`Preparing the similar-token table… ${Math.floor(100 * table.progress)} % `,
      el("progress", { max: "100", value: String(Math.floor(100 * table.progress)) }),
      " (built once, then cached). Until it is ready, each search scans the whole matrix: the same tokens, a little slower.");
  } else if (table.state === "failed") {
    line.className = "warn";
    line.textContent = `The similar-token table could not be built (${table.error}); searches scan the matrix instead.`;
  } else if (table.state === "ready" && state.prepared.has(state.model)) {
    line.className = "note ready";
    line.textContent = "The similar-token table is ready: token searches are now lookups.";
  }
  line.hidden = !(preparing || table.state === "failed" || (table.state === "ready" && state.prepared.has(state.model)));
  if (!$("#view-model").hidden && state.ran.has("model")) showModels();
}

// Model

function showModels() {
  const box = $("#model-servers");  // absent while the Model view's info is loading, or after its result was cleared
  if (!box) return;
  const models = table(["#", "name", "family", "layers", "hidden size", "vocabulary", "similar-token table"],
    state.models.map((m) => [m.index, m.name, m.family, m.layers, m.hidden_size, m.vocab_size, describeTable(tableOf(m.name))]));
  box.replaceChildren(models);
}

async function loadModel() {
  const section = $("#view-model");
  $(".error", section).hidden = true;
  try {
    const info = await api(`/api/info?${new URLSearchParams({ model: state.model })}`);
    const show = (value) => (Array.isArray(value) ? value.join(", ") || "–" : typeof value === "number" && Number.isInteger(value) ? value.toLocaleString("en") : fmt(value));
    const rows = Object.entries(info).map(([key, value]) => [key.replaceAll("_", " "), show(value)]);
    $("#model-result").replaceChildren(table(["field", "value"], rows, { class: "info" }), el("h3", {}, "Models on this server"),
      el("div", { id: "model-servers" }));
    showModels();
  } catch (error) {
    showError(section, error);
  }
}

function chooseModel(name) {
  state.model = name;
  for (const select of document.querySelectorAll("#model-select, #model-select-2")) select.value = name;
  for (const view of VIEWS) {
    for (const result of document.querySelectorAll(`#view-${view} .result`)) result.replaceChildren();
    for (const box of document.querySelectorAll(`#view-${view} .error`)) box.hidden = true;
  }
  $("#projection-toolbar").hidden = true;
  $("#projection-nearest").replaceChildren();
  state.projection = null;
  state.ran.clear();
  showStatus();
  showView(currentView());
}

function currentView() {
  const name = location.hash.replace("#", "");
  return VIEWS.includes(name) ? name : "tokens";
}

// ---------- start ----------

async function start() {
  $("#tokens-form").addEventListener("submit", submitTokens);
  $("#embedding-form").addEventListener("submit", submitEmbedding);
  $("#positions-form").addEventListener("submit", submitPositions);
  $("#similar-form").addEventListener("submit", submitSimilar);
  $("#context-form").addEventListener("submit", submitContext);
  const projection = $("#projection-form");
  projection.addEventListener("submit", submitProjection);
  projection.source.addEventListener("change", () => syncProjectionSource(projection));
  projection.method.addEventListener("change", () => { projection.method.dataset.chosen = "yes"; }); // the user's pick stays
  $("#projection-search").addEventListener("input", searchProjection);
  $("#projection-colour").addEventListener("change", renderProjection);
  for (const area of document.querySelectorAll("textarea")) {
    area.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) area.form.requestSubmit();
    });
  }
  for (const tab of document.querySelectorAll("nav [data-view]")) {
    tab.addEventListener("click", () => { location.hash = tab.dataset.view; });
  }
  window.addEventListener("hashchange", () => showView(currentView()));
  for (const select of document.querySelectorAll("#model-select, #model-select-2")) {
    select.addEventListener("change", () => chooseModel(select.value));
  }
  try {
    const data = await api("/api/models");
    state.models = data.models;
    state.limits = data.limits;
    for (const select of document.querySelectorAll("#model-select, #model-select-2")) {
      select.replaceChildren(...data.models.map((m) => el("option", { value: m.name }, `${m.name} (${m.family}, ${m.layers} layers)`)));
    }
    state.model = data.models[0].name;
    $("nav [data-view=compare]").hidden = data.models.length < 2;
  } catch (error) {
    showError($(`#view-${currentView()}`), error);
    return;
  }
  document.body.dataset.ready = "true";
  performance.mark("bertlens:ready");
  showView(currentView());
  watchStatus();
}

start();
window.addEventListener("load", () => setTimeout(() => loadPlotly().catch(() => {}), 300)); // ready before it is needed
