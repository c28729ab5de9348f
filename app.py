"""The vizhooks page: widgets in, vizhooks calls, st.* out.

Run with `streamlit run app.py` (or `make run`). This file is the entry only: page config,
language, the sidebar's choices, the view menu and the error frame. The page itself is the package
vizhooks.page (state, sidebar, menu, results, widgets, views/, sources/); every sentence comes from
vizhooks.page.texts. A new view is one module in vizhooks/page/views/ and its texts: the registry
there finds it (vizhooks.page.views says how).
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from vizhooks.analysis import image_digest
from vizhooks.models.registry import list_models, operator_listed
from vizhooks.page.classes import (
    apply_teacher,
    class_bar,
    class_counts,
    class_photo,
    gallery_panel,
    join_from_link,
    publish,
    send_photo_button,
    teacher_panel,
)
from vizhooks.page.errors import reason, shown_errors
from vizhooks.page.folders import use_root
from vizhooks.page.menu import view_menu
from vizhooks.page.metrics import routes, script_run
from vizhooks.page.present import header, lesson_takes_the_screen
from vizhooks.page.results import get_analysis, get_bundle
from vizhooks.page.sidebar import show_model_status, sidebar
from vizhooks.page.sources import photo_bytes
from vizhooks.page.sources.video import show_video
from vizhooks.page.startup import start as start_warm_up
from vizhooks.page.state import Context, init_state, sync_url
from vizhooks.page.texts import nt, t, use_session_language
from vizhooks.page.views import BY_NAME
from vizhooks.page.widgets import input_and_predictions


def main() -> None:
    use_root(Path(__file__).resolve().parent)  # sample_images/ and atlas/ beside this file
    init_state()
    use_session_language()
    st.set_page_config(page_title=t("page_title"), layout="wide",  # present mode folds the sidebar away
                       initial_sidebar_state="collapsed" if st.session_state.get("present") else "auto")
    join_from_link()
    apply_teacher()  # a student following a class takes the teacher's page before any widget is drawn
    choices, model_slot = sidebar()
    teacher_panel(st.sidebar)

    header()  # title and the Present switch
    bad = st.session_state.get("_url_notices")
    if bad:
        # why, for the value a teacher's link most often holds: a model this server's menu lacks (an operator's entry
        # that no longer loads is in the menu, and the sidebar says why)
        model = next((v for k, v in bad if k == "model" and v not in list_models() and not operator_listed(v)), None)
        st.info(t("url_notice", items=", ".join(f"{k}={v}" for k, v in bad))
                + ("" if model is None else "\n\n" + t("url_model_not_offered", model=model)))
    class_bar()
    if choices.refused is not None:  # the chosen model's layers cannot be listed: said as a load failure is
        st.error(t("bad_model", reason=reason(choices.refused)))
        st.stop()

    with shown_errors(), st.spinner(t("loading_model", name=choices.model), show_time=True):
        bundle = get_bundle(choices.model)  # an operator's broken checkpoint: one sentence, page stays
    show_model_status(model_slot, bundle)

    if choices.source in ("video", "live"):  # the link says so, though it cannot carry the clip or stream
        sync_url(choices, st.session_state.get("view", "maps"))
    if choices.source == "video":  # a clip: frames captured once, a slider instead of one picture
        show_video(bundle, choices)
        return
    if choices.source == "live":  # its own main area: a stream, not one picture
        from vizhooks.page.sources.live import show_live

        with shown_errors():
            show_live(choices.model, bundle, choices.layers, choices.cmap)
        return
    data = class_photo() or photo_bytes(choices.source)
    view = view_menu()  # the views in groups, read from the registry (vizhooks.page.views)
    lesson_takes_the_screen(view)
    sync_url(choices, view)
    publish(data)  # a teacher's page goes to the class
    if BY_NAME[view].own_area:  # its own main area, not one picture's views: shown the session's model
        BY_NAME[view].show(choices.model)
        return
    if data is None:
        st.info(t("no_upload") if choices.source == "upload" else t("no_camera"))
        return
    if not choices.layers:
        st.info(t("no_layers"))
        return
    digest = image_digest(data)
    with shown_errors(), st.spinner(nt("running", len(choices.layers), model=choices.model)):
        analysis = get_analysis(choices.model, digest, data, choices.size, choices.layers, choices.what)

    ctx = Context(choices, bundle, analysis, digest)
    if view != "lesson":  # the lesson shows its step first, the photo after it
        input_and_predictions(analysis, bundle, choices.size)
        send_photo_button(data)
    gallery_panel(ctx)
    if view == "lesson":  # the step under a rule; a view of the picture starts right under it
        st.divider()
    with shown_errors():
        BY_NAME[view].show(ctx)
    if view == "lesson":
        st.divider()
        input_and_predictions(analysis, bundle, choices.size)
        send_photo_button(data)


if __name__ == "__main__":  # Streamlit runs the page script as __main__, once per rerun of a session
    with script_run():
        main()
else:  # `streamlit run app.py` imports this file as a module to find its ASGI app: the page and /metrics
    start_warm_up()  # the first visitors' once-per-process work, done while the server waits for them
    app = st.App(__file__, routes=routes(class_counts))
