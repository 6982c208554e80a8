"""Inline CSS and the calculator's JavaScript for the self-contained HTML report.

The calculator re-implements `partitioner.analysis.analyze` (theory.md Thms 1-3, Cors 1-5,
Prop 1, §9, Errors 1) with the same formulas, names and validation, so each output cell
(`data-calc="KEY"`) equals `analyze(tau, d, M, rho).to_dict()[KEY]`.
"""

from __future__ import annotations

__all__ = ["CSS", "CALCULATOR_JS", "CALC_KEYS"]

CALC_KEYS: tuple[str, ...] = (
    "S", "M", "rho", "tau_max", "sigma_max", "sigma", "T_free", "T_async", "T_block", "T_gpipe",
    "T_real", "homogeneity_bias", "full_bias", "gpipe_error", "phase_transition", "slack",
    "binding_links", "first_binding_link", "overlap_gap", "effective_slope",
    "asymptotic_throughput_async", "asymptotic_throughput_blocking", "crossover_batches",
    "bubble_fraction", "first_latency",
)

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 2px 6px; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f3f3f3; }
.note { color: #555; font-size: 0.85em; }
.bad { color: #b00; font-weight: bold; }
.chart svg { max-width: 100%; height: auto; }
#calc label { display: inline-block; min-width: 3em; }
#calc input { font-family: monospace; width: 28em; margin: 2px 0; }
#calc-error { color: #b00; min-height: 1.2em; }
"""

CALCULATOR_JS = r"""
(function () {
  "use strict";
  function fail(msg) { throw new Error(msg); }
  function numbers(name, text) {
    var parts = text.split(",").map(function (s) { return s.trim(); }).filter(function (s) { return s !== ""; });
    return parts.map(function (s, i) {
      var x = Number(s);
      if (!isFinite(x) || x < 0) fail(name + "[" + i + "] must be finite and >= 0 (got " + JSON.stringify(s) + ")");
      return x;
    });
  }
  function sum(a) { return a.reduce(function (x, y) { return x + y; }, 0); }
  function max(a) { return Math.max.apply(null, a); }
  // Same formulas as partitioner.analysis.analyze (theory.md).
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
  function show(v) {
    if (v === null) return "-";
    if (typeof v === "boolean") return v ? "yes" : "no";
    if (Array.isArray(v)) return v.length ? v.map(show).join(", ") : "none";
    if (Number.isInteger(v)) return String(v);
    return Number(v.toPrecision(6)).toString();
  }
  function recompute() {
    var err = document.getElementById("calc-error");
    var cells = document.querySelectorAll("[data-calc]");
    try {
      var tau = numbers("tau", document.getElementById("calc-tau").value);
      var d = numbers("d", document.getElementById("calc-d").value);
      var Mtext = document.getElementById("calc-M").value.trim();
      var M = /^[0-9]+$/.test(Mtext) ? parseInt(Mtext, 10) : NaN;
      var rho = Number(document.getElementById("calc-rho").value);
      var a = analyze(tau, d, M, rho);
      err.textContent = "";
      cells.forEach(function (c) {
        var v = a[c.getAttribute("data-calc")];
        c.textContent = show(v);
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
