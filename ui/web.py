"""The web UI: a login panel, then four tabs (Chat, Library, BI dashboard, Engine) over one LexiconService.

``build_ui(service)`` returns the ``gr.Blocks``; ``app.server.create_app`` mounts it at ``/ui`` on the same
FastAPI app as the REST API, so both use the same tenants, documents and engine.
"""
from __future__ import annotations

from typing import Any

import gradio as gr

from ui.auth import VISIT_STORAGE_KEY, browser_secret, empty_visit, login
from ui.bi_tab import build_bi_tab, kpi_tiles_html
from ui.chat_tab import build_chat_tab, restore_chat
from ui.engine_tab import build_engine_tab, engine_values
from ui.library_tab import build_library_tab, library_values

TITLE = "Lexicon — legal & financial document intelligence"


def _kpis_html(service: Any, tenant: str) -> str:
    try:
        return kpi_tiles_html(service.kpis(tenant))
    except Exception as exc:  # KPIs are a nicety; a failure must not block the login
        return f"<p style='color:#c62828'>KPIs unavailable: {exc}</p>"


def build_ui(service: Any) -> gr.Blocks:
    with gr.Blocks(title=TITLE) as demo:
        session = gr.State(None)  # {"tenant", "api_key"}; server-side, per browser tab
        visit = gr.BrowserState(empty_visit(), storage_key=VISIT_STORAGE_KEY, secret=browser_secret(service))
        gr.Markdown(f"# {TITLE}")

        with gr.Column(visible=True, elem_id="login-panel") as login_panel:
            gr.Markdown("Log in with your API key (the same key you use for the REST API).")
            with gr.Row():
                api_key = gr.Textbox(type="password", label="API key", elem_id="login-key", scale=4)
                login_button = gr.Button("Log in", variant="primary", elem_id="login-button", scale=1)
            login_message = gr.Markdown(elem_id="login-message")

        with gr.Column(visible=False, elem_id="main-panel") as main_panel:
            with gr.Row():
                whoami = gr.Markdown(elem_id="whoami")
                logout_button = gr.Button("Log out", size="sm", elem_id="logout-button", scale=0)
            with gr.Tabs():
                with gr.Tab("Chat", id="chat", elem_id="tab-chat"):
                    chat = build_chat_tab(service, session, visit)
                with gr.Tab("Library", id="library", elem_id="tab-library"):
                    docs, delete_pick = build_library_tab(service, session)
                with gr.Tab("BI dashboard", id="bi", elem_id="tab-bi"):
                    kpi_tiles = build_bi_tab(service, session)
                with gr.Tab("Engine", id="engine", elem_id="tab-engine") as engine_tab:
                    engine_tiles, engine_raw, engine_plan = build_engine_tab(service, session)

        chat_outputs = [chat.chatbot, chat.messages, chat.thread_id, chat.threads]
        login_outputs = [session, login_message, login_panel, main_panel, whoami, visit, api_key,
                         *chat_outputs, docs, delete_pick, kpi_tiles]

        def enter(key: str, vis: dict | None, remembered: bool):
            vis = {**empty_visit(), **(vis or {})}
            sess, message = login(service, key)
            if sess is None:
                if remembered:  # a stored key that no longer works: forget it quietly
                    vis["api_key"] = ""
                    return (None, "", gr.skip(), gr.skip(), gr.skip(), vis, gr.skip(),
                            *[gr.skip()] * (len(login_outputs) - 7))
                return (None, message, gr.Column(visible=True), gr.Column(visible=False), "", gr.skip(),
                        "", *[gr.skip()] * (len(login_outputs) - 7))
            tenant = sess["tenant"]
            vis["api_key"] = sess["api_key"]
            return (sess, message, gr.Column(visible=False), gr.Column(visible=True),
                    f"Tenant: **{tenant}**", vis, "", *restore_chat(service, tenant, vis),
                    *library_values(service, tenant), _kpis_html(service, tenant))

        login_button.click(lambda k, v: enter(k, v, False), [api_key, visit], login_outputs)
        api_key.submit(lambda k, v: enter(k, v, False), [api_key, visit], login_outputs)
        demo.load(lambda v: enter((v or {}).get("api_key", ""), v, True) if (v or {}).get("api_key")
                  else tuple(gr.skip() for _ in login_outputs), [visit], login_outputs)

        def leave(vis: dict | None):
            vis = {**empty_visit(), **(vis or {}), "api_key": ""}  # threads stay remembered for next login
            return (None, "Logged out.", gr.Column(visible=True), gr.Column(visible=False), "", vis, "",
                    [], [], None, gr.skip(), "", gr.Dropdown(choices=[], value=None), "")

        logout_button.click(leave, [visit], login_outputs)

        def show_engine(sess: dict | None):
            return engine_values(service, sess["tenant"]) if sess else (gr.skip(), gr.skip(), gr.skip())

        engine_tab.select(show_engine, [session], [engine_tiles, engine_raw, engine_plan])
    settings = getattr(service, "settings", None)
    if settings is not None:  # a full UI queue says so at once (Gradio's "queue is full") instead of growing
        demo.queue(max_size=max(16, 4 * (settings.ask_max_active + settings.ask_max_queued)))
    return demo
