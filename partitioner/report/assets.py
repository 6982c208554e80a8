"""Inline CSS and the calculator's JavaScript for the self-contained HTML report.

The calculator re-implements `partitioner.analysis.analyze` (docs/theory.md Thms 1-3, Cors 1-5,
Prop 1, §9, Errors 1) with the same formulas, names and validation, so each output cell
(`data-calc="KEY"`) equals `analyze(tau, d, M, rho).to_dict()[KEY]`.
"""

from __future__ import annotations

__all__ = ["CSS", "CALCULATOR_JS", "CALC_KEYS", "CALC_UNITS"]

CALC_KEYS: tuple[str, ...] = (
    "S", "M", "rho", "tau_max", "sigma_max", "sigma", "T_free", "T_async", "T_block", "T_gpipe",
    "T_real", "homogeneity_bias", "full_bias", "gpipe_error", "phase_transition", "slack",
    "binding_links", "first_binding_link", "overlap_gap", "effective_slope",
    "asymptotic_throughput_async", "asymptotic_throughput_blocking", "crossover_batches",
    "bubble_fraction", "first_latency",
)
# how each output is shown: "ms" (seconds x 1e3), "/s", "%" or "" (as is); data-value stays SI
CALC_UNITS: dict[str, str] = {
    **dict.fromkeys(("tau_max", "sigma_max", "sigma", "T_free", "T_async", "T_block", "T_gpipe", "T_real", "homogeneity_bias", "full_bias", "slack", "overlap_gap", "effective_slope", "first_latency"), "ms"),
    "asymptotic_throughput_async": "/s", "asymptotic_throughput_blocking": "/s",
    "gpipe_error": "%", "bubble_fraction": "%",
}

CSS = """
* { box-sizing: border-box; }
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto; padding: 1em 1.5em;
       max-width: 1400px; color: #222; line-height: 1.4; overflow-wrap: break-word; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; border-bottom: 1px solid #ccc; }
.scroll { max-width: 100%; overflow-x: auto; margin: 0.6em 0; }
table { border-collapse: collapse; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 2px 6px; vertical-align: top; }
td { max-width: 40em; }
td.num, th, td:first-child { white-space: nowrap; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f3f3f3; }
.note { color: #555; font-size: 0.85em; }
.bad { color: #b00; font-weight: bold; }
td.bad { background: #fdecec; }
[data-key] { white-space: nowrap; }
#headline { border: 1px solid #bbb; border-radius: 6px; padding: 0.4em 1em; background: #f8faff; }
#headline ul { margin: 0.3em 0; padding-left: 1.2em; }
#headline li { margin: 0.15em 0; }
#headline .big { font-size: 1.15em; font-weight: 600; }
#headline .warning { color: #8a4b00; }
#headline .warning::before { content: "warning: "; font-weight: bold; }
pre.command { background: #f4f4f4; border: 1px solid #ddd; padding: 0.5em; font-size: 0.85em;
              white-space: pre; overflow-x: auto; max-width: 100%; }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(100%, 560px), 1fr)); gap: 0 2em; }
.chart { min-width: 0; }
.chart svg { width: 100%; max-width: 640px; height: auto; display: block; }
.chart svg text { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; }
#calc label { display: inline-block; min-width: 6em; }
#calc input { font-family: monospace; width: 28em; max-width: 100%; margin: 2px 0; }
#calc-error { color: #b00; min-height: 1.2em; font-weight: bold; }
#calc-out td.num { white-space: normal; text-align: left; overflow-wrap: anywhere; }
@media (max-width: 700px) {
  body { padding: 0.5em 0.8em; }
  table { font-size: 0.8em; }
  th, td { padding: 2px 3px; }
}
"""

CALCULATOR_JS = r"""
(function () {
  "use strict";
  function fail(msg) { throw new Error(msg); }
  // inputs are in milliseconds (as shown); the formulas run in seconds, like partition analyze
  function numbers(name, text) {
    var parts = text.split(",").map(function (s) { return s.trim(); }).filter(function (s) { return s !== ""; });
    return parts.map(function (s, i) {
      var x = Number(s);
      if (!isFinite(x) || x < 0) fail(name + "[" + i + "] must be finite and >= 0 ms (got " + JSON.stringify(s) + ")");
      return x / 1000;
    });
  }
  function sum(a) { return a.reduce(function (x, y) { return x + y; }, 0); }
  function max(a) { return Math.max.apply(null, a); }
  // Same formulas as partitioner.analysis.analyze (docs/theory.md).
  function analyze(tau, d, M, rho) {
    var S = tau.length;
    if (S === 0) fail("tau must hold at least one stage time");
    if (max(tau) <= 0) fail("tau needs at least one positive stage time");
    if (d.length !== S - 1) fail("d must hold S-1 = " + (S - 1) + " link latencies for S = " + S + " stages (got " + d.length + ")");
    if (!Number.isInteger(M) || M < 1) fail("M must be an integer >= 1 (got " + M + ")");
    if (!(rho >= 0 && rho <= 1)) fail("rho must be in [0, 1] (got " + rho + ")");
    var tmax = max(tau);
    var sigma = tau.map(function (t, s) { return s < S - 1 ? t + d[s] : t; });    // recurrence (2)
    var smax = max(sigma);
    var first = sum(tau) + sum(d);                                                  // Thm 2 at M = 1
    var T_free = (M - 1) * tmax + sum(tau);                                         // Thm 1
    var T_async = first + (M - 1) * tmax;                                           // Thm 2
    var T_block = (M - 1) * smax + sum(sigma);                                      // Thm 3
    var T_gpipe = (S + M - 1) * tmax;                                               // Cor 1
    var bias = sum(tau.map(function (t) { return tmax - t; }));                    // Cor 1
    var binding = [];
    for (var s = 0; s < S - 1; s++) if (sigma[s] > tmax) binding.push(s);           // Cor 4
    var fbl = null;                                                                 // Errors 1
    for (var k = 0; k < S - 1; k++) if (fbl === null || tau[k] > tau[fbl]) fbl = k;
    return {
      S: S, M: M, rho: rho, tau_max: tmax, sigma_max: smax, sigma: sigma,
      T_free: T_free, T_async: T_async, T_block: T_block, T_gpipe: T_gpipe,
      T_real: T_block - rho * (T_block - T_async),                                  // §9
      homogeneity_bias: bias, full_bias: bias - sum(d),                              // Cor 3
      gpipe_error: (T_gpipe - T_async) / T_async,
      phase_transition: smax > tmax,
      slack: tau.slice(0, S - 1).map(function (t) { return tmax - t; }),
      binding_links: binding, first_binding_link: fbl,
      overlap_gap: (M - 1) * (smax - tmax),                                         // Cor 5
      effective_slope: tmax + (1 - rho) * (smax - tmax),
      asymptotic_throughput_async: 1 / tmax, asymptotic_throughput_blocking: 1 / smax, // Prop 1
      crossover_batches: 1 + first / tmax,
      bubble_fraction: 1 - M * sum(tau) / (S * T_async),
      first_latency: first
    };
  }
  function show(v, unit) {
    if (v === null) return "-";
    if (typeof v === "boolean") return v ? "yes" : "no";
    if (Array.isArray(v)) return v.length ? v.map(function (x) { return show(x, unit); }).join(", ") : "none";
    if (unit === "ms") return Number((v * 1000).toPrecision(5)).toString() + " ms";
    if (unit === "%") return Number((v * 100).toPrecision(4)).toString() + " %";
    if (unit === "/s") return Number(v.toPrecision(5)).toString() + " /s";
    if (Number.isInteger(v)) return String(v);
    return Number(v.toPrecision(6)).toString();
  }
  function recompute() {
    var err = document.getElementById("calc-error");
    var cells = document.querySelectorAll("[data-calc]");
    try {
      var tau = numbers("tau", document.getElementById("calc-tau").value);
      var d = numbers("d", document.getElementById("calc-d").value);
      if (d.length === 0 && tau.length > 1) d = tau.slice(1).map(function () { return 0; });  // CLI default: zeros
      var Mtext = document.getElementById("calc-M").value.trim() || "1";                       // CLI default: 1
      if (!/^[0-9]+$/.test(Mtext) || parseInt(Mtext, 10) < 1)
        fail("M must be a whole number of micro-batches >= 1 (got " + JSON.stringify(Mtext) + ")");
      var M = parseInt(Mtext, 10);
      var rhoText = document.getElementById("calc-rho").value.trim() || "1";                  // CLI default: 1
      var rho = Number(rhoText);
      if (!isFinite(rho)) fail("rho must be a number in [0, 1] (got " + JSON.stringify(rhoText) + ")");
      var a = analyze(tau, d, M, rho);
      err.textContent = "";
      cells.forEach(function (c) {
        var v = a[c.getAttribute("data-calc")];
        c.textContent = show(v, c.getAttribute("data-unit"));
        c.setAttribute("data-value", JSON.stringify(v));
      });
    } catch (e) {
      err.textContent = e.message;
      cells.forEach(function (c) { c.textContent = "-"; c.setAttribute("data-value", "null"); });
    }
  }
  window.partitionerAnalyze = analyze;
  document.querySelectorAll("#calc input").forEach(function (i) { i.addEventListener("input", recompute); });
  recompute();
})();
"""
