// virtbench serve: a run page follows its run while it is in progress, without a reload.
// Polls /runs/ID/progress every 2 s; when the sample count or status changes it replaces the
// report body with the server's freshly rendered (escaped) partial. Written for virtbench; no
// library, no network beyond this server.
(function () {
  "use strict";
  var live = document.getElementById("live");
  if (!live) { return; }
  var run = live.getAttribute("data-run");
  var samples = live.getAttribute("data-samples");
  var status = live.getAttribute("data-status");
  var base = "/runs/" + encodeURIComponent(run);
  var fields = {status: "live-status", samples: "live-samples", trials_ok: "live-trials",
                trials_failed: "live-failed", last_trial: "live-last", duration: "live-duration"};

  function show(progress) {
    Object.keys(fields).forEach(function (key) {
      var element = document.getElementById(fields[key]);
      if (element) { element.textContent = String(progress[key]); }
    });
    var note = document.getElementById("live-note");  // "in progress": only while running
    if (note && progress.status !== "running") { note.parentNode.removeChild(note); }
  }

  function swap(part, id) {
    return fetch(base + "/" + part, {cache: "no-store"}).then(function (response) {
      if (!response.ok) { throw new Error(part + ": HTTP " + response.status); }
      return response.text();
    }).then(function (html) {
      document.getElementById(id).innerHTML = html;
    });
  }

  function refreshBody() {  // new metrics and workloads appear in the contents too
    return swap("body", "report-body").then(function () { return swap("toc", "report-toc"); });
  }

  function tick() {
    fetch(base + "/progress", {cache: "no-store"}).then(function (response) {
      if (!response.ok) { throw new Error("progress: HTTP " + response.status); }
      return response.json();
    }).then(function (progress) {
      show(progress);
      var changed = String(progress.samples) !== samples || progress.status !== status;
      samples = String(progress.samples);
      status = progress.status;
      live.setAttribute("data-samples", samples);
      live.setAttribute("data-status", status);
      return (changed ? refreshBody() : Promise.resolve()).then(function () {
        if (status === "running") { window.setTimeout(tick, 2000); }
      });
    }).catch(function () {
      window.setTimeout(tick, 5000);  // the server restarts or the store is busy: try again
    });
  }

  if (status === "running") { window.setTimeout(tick, 2000); }
}());
