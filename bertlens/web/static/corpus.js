// bertlens web explorer, the Corpus view: occurrence indexes opened by `bertlens serve --index DIR`, searched by
// example (POST /api/search) and a word's senses (POST /api/senses). Uses app.js's helpers ($, el, api, busy, plot,
// table, fmt, visible, escape, scoreBar, PALETTE). The answers are the library results' to_dict(), what `bertlens search
// --json` and `bertlens senses --json` print. Text from the API is inserted as text, never as HTML.
"use strict";

const corpus = { indexes: [], loaded: false };

function corpusIndex() {
  return $("#corpus-index").value;
}

// The indexes this server opened; none: say how to open one. Then the view's forms run once.
async function openCorpus() {
  const section = $("#view-corpus");
  for (const box of section.querySelectorAll(".error")) box.hidden = true;
  try {
    const data = await api("/api/indexes");
    corpus.indexes = data.indexes;
  } catch (error) {
    showError(section, error);
    return;
  }
  corpus.loaded = true;
  const select = $("#corpus-index");
  const previous = select.value; // kept when the view runs again (another model chosen at the top)
  select.replaceChildren(...corpus.indexes.map((ix) =>
    el("option", { value: ix.name }, `${ix.name} (${ix.rows.toLocaleString("en")} occurrences, ${ix.model})`)));
  $("#corpus-indexes").hidden = !corpus.indexes.length;
  if (!corpus.indexes.length) {
    $("#search-result").replaceChildren();
    showError(section, Object.assign(new Error("This server has no occurrence index open."), {
      hint: "Build one (bertlens index CORPUS --out DIR), then start the server with it: bertlens serve --index DIR " +
        "(add --model MODEL when the index was built with another model than the default).",
    }));
    return;
  }
  if (corpus.indexes.some((ix) => ix.name === previous)) select.value = previous;
  if (state.limits.max_search_k) $("#search-form").k.max = String(state.limits.max_search_k);
  chooseIndex();
  for (const form of section.querySelectorAll("form")) form.requestSubmit();
}

function chooseIndex() {
  const ix = corpus.indexes.find((i) => i.name === corpusIndex()) || corpus.indexes[0];
  if (!ix) return;
  $("#corpus-about").textContent = `${ix.texts.toLocaleString("en")} texts, ${ix.rows.toLocaleString("en")} word ` +
    `occurrences; model ${ix.model}; layers ${ix.layers.join(", ")} of ${ix.model_layers} (${ix.dims} dimensions, ` +
    `${ix.dtype}, pieces pooled by ${ix.pool}).`;
  for (const select of document.querySelectorAll("#view-corpus select[name=layer]")) {
    select.replaceChildren(...ix.layers.map((layer) => el("option", { value: String(layer) },
      layer === ix.model_layers ? `${layer} (last)` : String(layer))));
    select.value = String(ix.layers[ix.layers.length - 1]);
  }
  for (const result of document.querySelectorAll("#view-corpus .result")) result.replaceChildren();
}

// A sentence with the word [offsets start:end, in code points, as Python counts them] highlighted.
function highlighted(text, start, end) {
  const chars = Array.from(text);
  return el("span", { class: "snippet" }, chars.slice(0, start).join(""),
    el("mark", {}, chars.slice(start, end).join("")), chars.slice(end).join(""));
}

// Search

function searchBody(form, occurrence) {
  const body = {
    index: corpusIndex(),
    layer: form.layer.value === "" ? null : Number(form.layer.value),
    any_word: form.any_word.checked,
    k: Number(form.k.value || 10),
    exclude_same_text: form.exclude_same_text.checked,
    one_per_text: !form.all_per_text.checked,
  };
  if (occurrence) body.occurrence = occurrence;
  else {
    body.example = form.example.value;
    if (form.word.value.trim()) body.word = form.word.value.trim();
  }
  return body;
}

async function submitSearch(event, occurrence = null) {
  if (event) event.preventDefault();
  const form = $("#search-form");
  await busy(form, async () => renderSearch(await api("/api/search", searchBody(form, occurrence))));
}

// Search again from an occurrence of the index (a hit): its own vector is the example.
function searchFrom(hit) {
  submitSearch(null, [hit.text_id, hit.position]);
  $("#search-form").scrollIntoView({ behavior: "smooth", block: "start" });
}

function sensesOf(word) {
  const form = $("#senses-form");
  form.word.value = word;
  form.requestSubmit();
  form.scrollIntoView({ behavior: "smooth", block: "start" });
}

// What the scores mean, in the words of `bertlens search`'s table (occurrences/search_results.py): a same-word search
// reads the top hit against the word's own random pairs (`word_baseline`; each hit's "pairs below" is the library's
// `word_percentile`, the one number both the table and the reading show); an any-word search reads it against the
// layer's random occurrences (`baseline`). NaN comes as null.
const quoted = (word) => (word.includes("'") && !word.includes('"') ? `"${word}"` : `'${word}'`); // as Python's repr
const fixed = (value, digits) => (typeof value === "number" ? value.toFixed(digits) : "-");
const percent = (share) => (typeof share === "number" ? `${share.toFixed(0)}%` : "–");

function wordReading(own, hit) {
  if (!(own.pairs > 0)) {
    return `${fixed(hit.score, 2)}: ${quoted(own.word)} has too few occurrences in different texts ` +
      `(${own.occurrences}) to say what its typical pair scores.`;
  }
  const level = hit.score > own.median ? "more alike than" : "no more alike than";
  return `${fixed(hit.score, 2)} is ${level} this word's typical pair: above ${percent(hit.word_percentile)} of ` +
    `random pairs of ${quoted(own.word)} occurrences in different texts (median ${fixed(own.median, 2)}, 90th ` +
    `percentile ${fixed(own.p90, 2)}; ${own.pairs.toLocaleString("en")} pairs of ` +
    `${own.sampled.toLocaleString("en")} occurrences, layer ${own.layer}).`;
}

function layerReading(b, score) {
  if (typeof b.random_pairs !== "number") return `${fixed(score, 2)}: the index is too small for a baseline.`;
  const same = b.same_word_pairs;
  const level = typeof same === "number" && score >= same ? "high" : score > b.random_pairs ? "between" : "low";
  return `${fixed(score, 2)} here is ${level}: random pairs ${fixed(b.random_pairs, 2)}, same-word pairs ` +
    `${fixed(same, 2)} (layer ${b.layer}, ${b.pairs.toLocaleString("en")} pairs each)`;
}

function readings(data) {
  const b = data.baseline;
  const own = data.word_baseline;
  const top = data.hits.length ? data.hits[0] : null;
  const anywhere = `random occurrences of any words score ${fixed(b.random_pairs, 2)} on average (layer ${b.layer})`;
  const lines = [];
  if (own) {
    if (top) lines.push(`top hit: ${wordReading(own, top)}`);
    if (own.pairs > 0) {
      lines.push("pairs below: the share of random pairs of this word's occurrences (different texts) that score " +
        "lower; above 50% a hit is more alike than the word's typical pair.");
    }
    lines.push(`For scale: ${anywhere}.`);
  } else {
    lines.push(top ? `baseline: ${layerReading(b, top.score)}` : `baseline: ${anywhere}.`);
  }
  return el("div", { class: "note baseline" }, lines.map((line) => el("p", {}, line)));
}

function renderSearch(data) {
  const out = $("#search-result");
  const query = data.query;
  const best = Math.max(1e-9, ...data.hits.map((h) => Math.abs(h.score)));
  const own = data.word_baseline && data.word_baseline.pairs > 0; // a "pairs below" column, as the CLI's table
  const rows = data.hits.map((hit, i) => {
    const bar = scoreBar(hit.score, (100 * Math.max(0, hit.score)) / best);
    const actions = el("span", { class: "actions" },
      el("button", { type: "button", class: "link", title: "search again from this occurrence", onclick: () => searchFrom(hit) }, "like this"),
      " · ",
      el("button", { type: "button", class: "link", title: `the senses of ${hit.word}`, onclick: () => sensesOf(hit.word) }, "senses"));
    return [i + 1, highlighted(hit.snippet, hit.snippet_start, hit.snippet_end), bar,
      ...(own ? [el("span", { class: "share" }, percent(hit.word_percentile))] : []),
      el("span", { class: "source", title: `text ${hit.text_id}, word ${hit.position}` }, `${hit.file}:${hit.line}`), actions];
  });
  const what = data.mode === "any word" ? "other words used most like" : "occurrences most like";
  const from = query.text_id === null ? "" : ` (occurrence ${query.text_id}:${query.position} of the index)`;
  out.replaceChildren(
    el("h3", {}, `${data.hits.length} ${what} “${visible(query.word)}”`, el("span", { class: "kind" }, ` at layer ${data.layer}`)),
    el("p", { class: "example" }, "Example: ", highlighted(query.snippet, query.snippet_start, query.snippet_end), from),
    el("p", { class: "note" }, `${data.hits.length} of ${data.candidates.toLocaleString("en")} occurrences; ${data.method}.`),
    table(["#", "sentence", "cosine", ...(own ? ["pairs below"] : []), "source", ""], rows, { class: "hits" }),
    readings(data),
    ...(data.notes || []).map((note) => el("p", { class: "note" }, onThePage(note))));
}

// A library note that names the Python option and the CLI's flag, said with this form's checkbox instead.
function onThePage(note) {
  return note.replace(/\(every occurrence: one_per_text=False; on the command line --all-per-text\)/,
    "(every occurrence: tick “all occurrences per text”)");
}

// Senses

async function submitSenses(event) {
  event.preventDefault();
  const form = event.target;
  await busy(form, async () => {
    const k = form.k.value.trim().toLowerCase();
    if (k !== "" && k !== "auto" && !/^\d+$/.test(k)) {
      throw Object.assign(new Error(`Senses must be 'auto' or a number, not “${form.k.value}”.`), { hint: "e.g. auto, or 3." });
    }
    await renderSenses(await api("/api/senses", {
      index: corpusIndex(),
      word: form.word.value,
      k: k === "" || k === "auto" ? "auto" : Number(k),
      layer: form.layer.value === "" ? null : Number(form.layer.value),
    }));
  });
}

async function renderSenses(data) {
  const out = $("#senses-result");
  out.replaceChildren();
  const senses = data.senses;
  const points = data.points; // every occurrence clustered: {x, y, sense, occurrence: {snippet, start, end, file, line}}
  const colour = (s) => PALETTE[s % PALETTE.length];
  // a sense is named by the words that set it apart from the others (c-TF-IDF; its card lists them all), and its size
  const named = (sense) => `sense ${sense.sense}${sense.words.length ? ": " + sense.words.slice(0, 3).map((w) => visible(w.word)).join(", ") : ""}`;
  const traces = senses.map((sense) => {
    const members = points.filter((p) => p.sense === sense.sense);
    return {
      type: "scattergl", mode: "markers", name: escape(`${named(sense)} (${sense.size.toLocaleString("en")})`),
      x: members.map((p) => p.x), y: members.map((p) => p.y),
      hovertext: members.map((p) => escape(`sense ${sense.sense}: ${p.occurrence.snippet}`)),
      hoverinfo: "text", marker: { color: colour(sense.sense), size: members.length > 1000 ? 4 : 7, opacity: 0.8 },
    };
  });
  const count = data.clustered === data.found ? `${data.found.toLocaleString("en")} occurrences`
    : `${data.clustered.toLocaleString("en")} of ${data.found.toLocaleString("en")} occurrences (a sample)`;
  out.append(el("h3", {}, `“${visible(data.word)}”: ${data.k} sense${data.k === 1 ? "" : "s"} in ${count}`,
    el("span", { class: "kind" }, ` at layer ${data.layer}`)));
  out.append(el("p", { class: "note" }, `How the number of senses was chosen: ${data.how}.`));
  for (const note of data.notes || []) out.append(el("p", { class: "note" }, note));
  const axis = (i) => `PC${i + 1} (${(100 * data.explained[i]).toFixed(1)}% of variance)`;
  const map = await plot(out, traces, {
    height: 460, hovermode: "closest", xaxis: { title: { text: axis(0) } }, yaxis: { title: { text: axis(1) } },
    legend: { orientation: "h", y: -0.18 }, margin: { l: 60, r: 20, t: 20, b: 80 },
  }, "senses-map");
  map.dataset.points = String(points.length);
  const cards = el("div", { class: "senses" });
  for (const sense of senses) {
    const typical = sense.typical.map((t, i) => el("li", {}, highlighted(t.snippet, t.start, t.end),
      el("span", { class: "source" }, ` ${t.file}:${t.line} · cosine with the centre ${fmt(sense.scores[i], 3)}`)));
    cards.append(el("div", { class: "sense", style: `border-left-color:${colour(sense.sense)}` },
      el("h4", {}, named(sense).replace(/^sense/, "Sense"), el("span", { class: "kind" },
        ` ${sense.size.toLocaleString("en")} occurrences (${(100 * sense.share).toFixed(0)}%)`)),
      typical.length ? el("ol", { class: "typical" }, typical) : null,
      sense.words.length
        ? el("p", { class: "cooccurring" }, el("span", { class: "note" }, "sets it apart: "),
          ...sense.words.map((w) => el("span", { class: "chip word", title: `in ${w.count} of this sense's sentences, ${w.others} of the others' (c-TF-IDF ${fmt(w.score, 3)})` }, visible(w.word))))
        : el("p", { class: "note" }, "No word stands out in this sense's sentences.")));
  }
  out.append(el("p", { class: "note" }, "Each card: the sentences nearest the sense's centre (most typical first), and the words that set the sense apart: frequent in its sentences, rare in the word's other occurrences (class-based TF-IDF; names and function words left out)."), cards);
}

// ---------- start ----------

$("#search-form").addEventListener("submit", (event) => submitSearch(event));
$("#senses-form").addEventListener("submit", submitSenses);
$("#corpus-index").addEventListener("change", () => {
  chooseIndex();
  for (const form of document.querySelectorAll("#view-corpus form")) form.requestSubmit();
});
