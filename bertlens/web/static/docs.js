// Draws the API reference from /openapi.json (no external script: the page works offline).
"use strict";

function node(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (key === "class") element.className = value;
    else element.setAttribute(key, value);
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined) element.append(child instanceof Node ? child : String(child));
  }
  return element;
}

function resolve(spec, schema) {
  while (schema && schema.$ref) schema = spec.components.schemas[schema.$ref.split("/").pop()];
  return schema || {};
}

function typeOf(spec, schema) {
  schema = resolve(spec, schema);
  if (schema.enum) return schema.enum.map((v) => JSON.stringify(v)).join(" | ");
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (schema.anyOf) return schema.anyOf.map((s) => typeOf(spec, s)).join(" | ");
  if (schema.type === "array") return `list of ${typeOf(spec, schema.items)}`;
  return schema.type || "any";
}

function fieldsTable(spec, rows) {
  const head = node("tr", {}, ["field", "type", "default", "what it is"].map((h) => node("th", {}, h)));
  return node("div", { class: "table-wrap" }, node("table", {}, node("thead", {}, head), node("tbody", {}, rows.map((r) =>
    node("tr", {}, node("td", {}, node("code", {}, r.name)), node("td", {}, r.type), node("td", {}, r.default), node("td", { class: "wrap" }, r.description))))));
}

async function main() {
  const spec = await (await fetch("/openapi.json")).json();
  const out = document.getElementById("endpoints");
  out.replaceChildren(node("h2", {}, `Endpoints (bertlens ${spec.info.version})`));
  for (const [path, methods] of Object.entries(spec.paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      const section = node("section", { class: "endpoint" },
        node("h3", {}, node("code", {}, `${method.toUpperCase()} ${path}`)),
        node("p", {}, operation.summary || ""));
      const parameters = (operation.parameters || []).map((p) => ({
        name: p.name, type: typeOf(spec, p.schema), default: JSON.stringify(resolve(spec, p.schema).default ?? null), description: p.description || "",
      }));
      if (parameters.length) section.append(node("p", { class: "note" }, "Query parameters:"), fieldsTable(spec, parameters));
      const body = operation.requestBody && resolve(spec, operation.requestBody.content["application/json"].schema);
      if (body && body.properties) {
        const required = new Set(body.required || []);
        const rows = Object.entries(body.properties).map(([name, schema]) => ({
          name, type: typeOf(spec, schema), default: required.has(name) ? "required" : JSON.stringify(schema.default ?? null),
          description: schema.description || "",
        }));
        section.append(node("p", { class: "note" }, body.description || "JSON body:"), fieldsTable(spec, rows));
        const example = (body.examples || [])[0];
        if (example) {
          const curl = `curl -s http://${location.host}${path} -H 'Content-Type: application/json' -d '${JSON.stringify(example)}'`;
          section.append(node("p", { class: "note" }, "Example:"), node("pre", {}, curl));
        }
      } else if (method === "get") {
        section.append(node("pre", {}, `curl -s http://${location.host}${path}`));
      }
      out.append(section);
    }
  }
}

main().catch((error) => {
  document.getElementById("endpoints").textContent = `Could not read /openapi.json: ${error.message}`;
});
