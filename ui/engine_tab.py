"""Engine panel: live scheduler and memory numbers from ``service.engine_stats(tenant)`` and the planner view.

Refreshes every few seconds while "Live" is ticked (a ``gr.Timer``), and on demand. Engine-wide figures
(pools, requests, tokens/s) are global; snapshot names and counts are the logged-in tenant's own only.
"""
from __future__ import annotations

import html
from typing import Any

import gradio as gr

from ui.auth import require_tenant

REFRESH_SECONDS = 3.0


def _ratio(used: Any, total: Any) -> tuple[str, int | None]:
    if isinstance(used, (int, float)) and isinstance(total, (int, float)) and total:
        return f"{used:,} / {total:,}", int(round(100 * used / total))
    if used is None and total is None:
        return "n/a", None
    return f"{used if used is not None else '?'} / {total if total is not None else '?'}", None


def _snapshot_text(snapshots: Any, names: Any = None) -> str:
    if isinstance(snapshots, int) and isinstance(names, (list, tuple)):
        return f"{snapshots}" + (": " + ", ".join(map(str, names)) if names else "")
    if isinstance(snapshots, dict):
        return f"{len(snapshots)}: " + ", ".join(f"{k} ({v} tok)" if v else str(k) for k, v in snapshots.items())
    if isinstance(snapshots, (list, tuple)):
        names = [s.get("name", str(s)) if isinstance(s, dict) else str(s) for s in snapshots]
        return f"{len(names)}" + (": " + ", ".join(names) if names else "")
    return "n/a" if snapshots is None else str(snapshots)


def stats_html(stats: dict) -> str:
    """Tiles for the numbers a person watches: requests, KV pool, Mamba slots, snapshots, throughput."""
    kv, kv_pct = _ratio(stats.get("kv_blocks_used"), stats.get("kv_blocks_total"))
    mamba, mamba_pct = _ratio(stats.get("mamba_slots_used"), stats.get("mamba_slots_total"))
    tps = stats.get("tokens_per_s")
    kv_label = "KV pool blocks"
    if stats.get("block_size") or stats.get("kv_dtype"):
        kv_label += f" ({stats.get('block_size', '?')} tok, {stats.get('kv_dtype', '?')})"
    tiles = [
        ("Running requests", stats.get("running", "n/a"), None),
        ("Queued requests", stats.get("waiting", stats.get("queued", "n/a")), None),
        (kv_label, kv, kv_pct),
        ("Mamba state slots", mamba, mamba_pct),
        ("Snapshots held", _snapshot_text(stats.get("snapshots"), stats.get("snapshot_names")), None),
        ("Tokens / s (recent)", f"{tps:,.1f}" if isinstance(tps, (int, float)) else "n/a", None),
    ]
    if stats.get("generated_tokens") is not None:
        tiles.append(("Generated tokens", f"{stats['generated_tokens']:,}", None))
    if stats.get("peak_batch") is not None:
        tiles.append(("Peak batch", f"{stats['peak_batch']} of {stats.get('max_num_seqs', '?')}", None))
    cells = []
    for label, value, pct in tiles:
        bar = (f"<progress max='100' value='{pct}' style='width:100%'></progress><div style='font-size:0.75em'>"
               f"{pct}% used</div>") if pct is not None else ""
        cells.append(
            "<div class='engine-tile' style='border:1px solid #d0d7de;border-radius:10px;padding:10px 14px;"
            "min-width:170px;flex:1'>"
            f"<div style='font-size:0.85em;opacity:0.75'>{html.escape(label)}</div>"
            f"<div class='engine-value' style='font-size:1.4em;font-weight:700'>{html.escape(str(value))}</div>"
            f"{bar}</div>")
    model = stats.get("model") or stats.get("model_name")
    head = f"<p>Model: <b>{html.escape(str(model))}</b></p>" if model else ""
    return head + "<div id='engine-tiles' style='display:flex;gap:12px;flex-wrap:wrap'>" + "".join(cells) + "</div>"


def read_stats(service: Any, tenant: str | None = None) -> tuple[str, dict]:
    try:
        stats = dict(service.engine_stats(tenant) or {})
    except Exception as exc:  # a remote engine may be unreachable; say so in the panel
        return f"<p style='color:#c62828'>Engine stats unavailable: {html.escape(str(exc))}</p>", {}
    return stats_html(stats), stats


def read_plan(service: Any) -> str:
    try:
        return service.plan_view() or "(no planner view)"
    except Exception as exc:
        return f"planner unavailable: {exc}"


def build_engine_tab(service: Any, session: gr.State) -> tuple[gr.HTML, gr.JSON, gr.Code]:
    """Builds the panel; returns (tiles, raw stats, planner) so the tab's select event can fill them."""
    with gr.Row():
        live = gr.Checkbox(value=False, label="Live (every 3 s)", elem_id="engine-live", scale=0)
        refresh = gr.Button("Refresh", size="sm", elem_id="engine-refresh", scale=0)
    tiles = gr.HTML(elem_id="engine-stats")
    with gr.Accordion("All engine counters", open=False):
        raw = gr.JSON(elem_id="engine-raw")
    gr.Markdown("### Capacity planner (loaded model)")
    plan = gr.Code(label="Planner", language=None, interactive=False, elem_id="engine-plan", wrap_lines=True)
    timer = gr.Timer(REFRESH_SECONDS, active=False)

    def on_refresh(sess: dict | None):
        return engine_values(service, require_tenant(sess))

    def on_tick(sess: dict | None):
        return read_stats(service, sess["tenant"]) if sess and sess.get("tenant") else (gr.skip(), gr.skip())

    refresh.click(on_refresh, [session], [tiles, raw, plan])
    timer.tick(on_tick, [session], [tiles, raw], show_progress="hidden")
    live.change(lambda on: gr.Timer(active=on), [live], [timer])
    return tiles, raw, plan


def engine_values(service: Any, tenant: str | None = None) -> tuple:
    """(tiles, raw stats, planner) as ``tenant`` may see them (no snapshot names at all without a tenant)."""
    return (*read_stats(service, tenant), read_plan(service))
