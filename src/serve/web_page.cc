#include "serve/web_page.h"

namespace ic {

const std::string& web_page_html() {
  static const std::string kPage = R"html(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>inception.cpp serve</title>
<style>
  body { font-family: sans-serif; max-width: 44em; margin: 2em auto; color: #222; }
  #drop { border: 2px dashed #888; border-radius: 8px; padding: 2em; text-align: center; }
  #drop.over { background: #eef; }
  #preview { width: 224px; display: block; margin: 1em auto; image-rendering: pixelated; }
  #preview[src=""], #preview:not([src]) { display: none; }
  .row { display: flex; align-items: center; margin: .3em 0; }
  .label { width: 14em; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
  .bar { background: #4a7fd4; height: 1.1em; margin: 0 .5em; }
  .score { font-variant-numeric: tabular-nums; }
  #error { color: #b00; }
</style>
</head>
<body>
<h1>inception.cpp: <span id="model">model</span></h1>
<p id="version"></p>
<div id="drop">Drop a JPEG or PNG here, or <input type="file" id="file" accept="image/*"></div>
<img id="preview" alt="">
<div id="status"></div>
<div id="results"></div>
<div id="error"></div>
<script>
"use strict";
let modelName = null;
async function loadModel() {
  const health = await fetch("/healthz");
  const info = await health.json();
  if (!health.ok) throw new Error(info.error || "no model");
  modelName = info.model;
  document.getElementById("model").textContent = info.model;
  document.getElementById("version").textContent = "version " + info.version;
}
function toBase64(buffer) {
  const bytes = new Uint8Array(buffer);
  let text = "";
  for (let i = 0; i < bytes.length; i += 0x8000)
    text += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  return btoa(text);
}
function show(result) {
  const box = document.getElementById("results");
  box.innerHTML = "";
  for (const [label, score] of result) {
    const row = document.createElement("div");
    row.className = "row";
    const name = document.createElement("span");
    name.className = "label";
    name.textContent = label;
    const bar = document.createElement("span");
    bar.className = "bar";
    bar.style.width = Math.max(1, Math.round(score * 300)) + "px";
    const value = document.createElement("span");
    value.className = "score";
    value.textContent = score.toFixed(4);
    row.append(name, bar, value);
    box.appendChild(row);
  }
  document.getElementById("status").textContent = "top " + result.length;
  document.body.setAttribute("data-done", "1");
}
async function classify(blob) {
  document.getElementById("error").textContent = "";
  document.getElementById("status").textContent = "classifying...";
  document.getElementById("preview").src = URL.createObjectURL(blob);
  try {
    if (!modelName) await loadModel();
    const body = {instances: [{b64: toBase64(await blob.arrayBuffer())}], top_k: 5};
    const response = await fetch("/v1/models/" + modelName + ":classify", {
      method: "POST", headers: {"Content-Type": "application/json"},
      body: JSON.stringify(body)});
    const answer = await response.json();
    if (!response.ok) throw new Error(answer.error || ("HTTP " + response.status));
    show(answer.result[0]);
  } catch (e) {
    document.getElementById("status").textContent = "";
    document.getElementById("error").textContent = String(e.message || e);
    document.body.setAttribute("data-done", "error");
  }
}
const drop = document.getElementById("drop");
drop.addEventListener("dragover", e => { e.preventDefault(); drop.classList.add("over"); });
drop.addEventListener("dragleave", () => drop.classList.remove("over"));
drop.addEventListener("drop", e => {
  e.preventDefault();
  drop.classList.remove("over");
  if (e.dataTransfer.files.length) classify(e.dataTransfer.files[0]);
});
document.getElementById("file").addEventListener("change", e => {
  if (e.target.files.length) classify(e.target.files[0]);
});
loadModel().catch(e => { document.getElementById("error").textContent = String(e.message); });
const auto = new URLSearchParams(location.search).get("image");
if (auto) {
  fetch(auto).then(r => r.blob()).then(classify).catch(e => {
    document.getElementById("error").textContent = "cannot load " + auto + ": " + e.message;
    document.body.setAttribute("data-done", "error");
  });
}
</script>
</body>
</html>
)html";
  return kPage;
}

}  // namespace ic
