"""The lesson: a step-by-step tour of hooks, each step with a live part, its code, a question and
its answer. The live parts are the other views' own functions."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

import streamlit as st

import vizhooks as vz
from vizhooks.analysis import hook_calls_demo, image_digest, lesson_sanity, sanity_bytes
from vizhooks.hooks.patching import PatchResult
from vizhooks.interpret.methods import ExplainError
from vizhooks.lesson.code import LESSON_CONCEPTS, LESSON_CROPS, Code, ConvPlace, conv_place
from vizhooks.lesson.display import (
    PATCH_SOURCE_NAME,
    concept_strips,
    patch_source,
    patch_sweep,
    photo_concepts,
    sticker_heat,
    sticker_table,
    top_relevance,
)
from vizhooks.lesson.handout import LessonChoices, file_name, lesson_file, lesson_parts, step_code
from vizhooks.lesson.steps import (
    FORMATS,
    PRESETS,
    STEPS,
    Step,
    plan_minutes,
    plan_steps,
    preset_minutes,
    preset_plan,
    step_index,
)
from vizhooks.page.builds import Builds
from vizhooks.page.classes import answer_hidden, class_page, class_photo, page_moved, poll
from vizhooks.page.errors import reason
from vizhooks.page.present import NAV_KEY, present_on, scroll_to_step, step_anchor
from vizhooks.page.results import cached, conv_infos, get_analysis, get_bundle, grid_png, tensor_bytes
from vizhooks.page.sources import photo_bytes
from vizhooks.page.taught import code_head
from vizhooks.page.texts import language, nt, sentences, t
from vizhooks.page.views import View, backward, compare, convolution, gradcam, gradients, intervene, maps, table
from vizhooks.page.views.code import chosen_target, image_path
from vizhooks.page.widgets import class_picker, select_all, shown_labels
from vizhooks.render.figures import channel_overlay, image_to_png

if TYPE_CHECKING:  # annotations only: a view never imports the page's state (urlstate reads the views)
    from vizhooks.page.state import Choices, Context


def _clamp_choice(ctx: Context) -> tuple[str, int]:
    """The clamp step's layer and percentile, as the Intervene widgets hold them."""
    layers = list(ctx.choices.layers)
    chosen = st.session_state.get("iv_clamp_at")
    percentile = int(st.session_state.get("iv_clip_pct", intervene.CLAMP_DEFAULT))
    return (chosen if chosen in layers else layers[-1]), percentile


def _conv_choice() -> ConvPlace | None:
    """The place the Convolution view shows (its widgets' values), once it has been shown."""
    state = st.session_state
    if "cv_layer" not in state:
        return None
    return ConvPlace(str(state["cv_layer"]), int(state.get("cv_channel", 0)), int(state.get("cv_row", 0)),
                     int(state.get("cv_col", 0)))


def photo_b() -> tuple[bytes | None, str]:
    """The patching step's photo B, the Compare view's second photo: its bytes (None before one is
    given) and the path its code reads it from."""
    source = st.session_state.get("compare_source", "sample")
    name = st.session_state.get("compare")
    path = f"sample_images/{name}" if source == "sample" and name else PATCH_SOURCE_NAME
    return photo_bytes(source, sample_key="compare", prefix="compare_"), path


def lesson_code(step: Step, ctx: Context) -> Code:
    """The step's code as set-up (the same for every step: all the chosen layers) and hook lines."""
    bundle, c = ctx.bundle, ctx.choices
    clamp_at: str | None = None
    limit = 0.0
    if step.code == ("lesson", "clamp"):
        clamp_at, percentile = _clamp_choice(ctx)
        target = chosen_target()
        top1 = int(ctx.analysis.logits[0].argmax())
        limit = intervene.clamp_limit(ctx, clamp_at, top1 if target is None else target, percentile)[0]
    return step_code(step, model=c.model, image=image_path(c), size=c.size, layers=list(c.layers),
                     target=chosen_target(), pretrained=bundle.pretrained, num_classes=len(bundle.categories),
                     lang=language(), clamp_at=clamp_at, limit=limit, conv=_conv_choice(), head=code_head(c.model),
                     source_image=photo_b()[1])


#: What a class's photo is called in a take-home file when the teacher's page did not say.
CLASS_PHOTO_NAME = "class_photo.jpg"
#: The bytes of finished take-home files the server keeps for whoever asks next.
TAKE_HOME_BYTES = 200e6
#: How often the page looks at a running build's progress (seconds).
TAKE_HOME_POLL = 1.0


def shown_photo(c: Choices) -> tuple[bytes | None, str]:
    """The photo this page shows and its file name: the class's (the teacher's) while the page shows
    it, as app.py does (a follower's own sample is not on its screen), else the sidebar's."""
    data = class_photo()
    if data is not None:
        return data, str(class_page().get("photo_name") or CLASS_PHOTO_NAME)
    return photo_bytes(c.source), Path(image_path(c)).name


@st.cache_resource(show_spinner=False)
def take_homes() -> Builds:
    """The take-home files of every session of this server, each made once (vizhooks.page.builds)."""
    return Builds(TAKE_HOME_BYTES)


def take_home_choices(ctx: Context) -> LessonChoices | None:
    """What this page shows, as a lesson file is made from it: its photo, model, layers, plan and
    settings; None without a photo."""
    c = ctx.choices
    data, name = shown_photo(c)
    if data is None:
        return None
    clamp_at, percentile = _clamp_choice(ctx)
    return LessonChoices(model=c.model, photo=data, photo_name=name, size=c.size, lang=language(),
                         layers=tuple(c.layers), target=chosen_target(), clamp_at=clamp_at, percentile=percentile,
                         channels=c.channels, order=c.grid_order, cmap=c.cmap, norm=c.norm, columns=c.columns or None,
                         conv=_chosen_place(ctx), head=code_head(c.model), plan=the_plan(),
                         source_photo=photo_b()[0], source_name=Path(photo_b()[1]).name)


def _chosen_place(ctx: Context) -> ConvPlace | None:
    """The Convolution view's place, None while it is the view's default (as the lesson file's own
    default is): pages that opened the conv step and pages that did not ask for one file."""
    chosen = _conv_choice()
    if chosen is None or chosen.channel:
        return chosen
    layers = list(ctx.choices.layers)
    infos = {info.name: info for info in conv_infos(ctx.choices.model, tuple(ctx.analysis.x.shape[-2:]))}
    info = infos.get(chosen.layer)
    if info is None or chosen.layer != conv_place(ctx.choices.model, layers).layer:
        return chosen
    h, w = info.out_hw or (1, 1)
    return None if (chosen.row, chosen.col) == (h // 2, w // 2) else chosen


def take_home_key(choices: LessonChoices, digest: str, fmt: str) -> tuple:
    """What decides a lesson file: every choice, the photo by its ``digest`` (everyone on one class
    state asks for the same key)."""
    return ("take-home", fmt, replace(choices, photo=b""), digest)


def _make(key: tuple, choices: LessonChoices, bundle: vz.ModelBundle, fmt: str) -> None:
    take_homes().start(key, fmt, lesson_parts(choices, fmt),
                       lambda progress: lesson_file(choices, bundle, fmt, progress))


def _building(key: tuple, fmt: str) -> None:
    """A running build's progress, looked at every second; the whole page runs again when it is done
    (its download button then shows)."""
    build = take_homes().find(key)
    if build is None or not build.running:
        st.rerun(scope="app")
        return
    last = take_homes().last_seconds(fmt)
    text = t("follow_building", what=t(f"follow_what_{fmt}"), done=build.done, total=build.total,
             seconds=build.seconds())
    if last is not None:
        text = f"{text} {t('follow_building_last', last=last)}"
    st.progress(min(build.done / build.total, 1.0), text=text)


def take_home(ctx: Context) -> None:
    """The lesson on what this page shows (the teacher's photo and choices for a follower), to take home
    as a notebook or an HTML handout. Each file is made once per class state for every session that asks
    (vizhooks.page.builds), in a thread of its own, so a rerun of the page (the teacher moving on) does
    not cut it short; while it builds, its progress and time show."""
    choices = take_home_choices(ctx)
    if choices is None:
        return
    st.markdown(f"**{t('handout_download')}**")
    st.caption(t("handout_download_help", n=len(plan_steps(the_plan()))))
    for col, fmt in zip(st.columns(2), FORMATS, strict=True):
        key = take_home_key(choices, ctx.digest, fmt)
        build = take_homes().find(key)
        with col:
            if build is not None and build.data is not None:
                # The bytes in the run, not a deferred download: Streamlit keeps a file made on the click
                # only until two script runs of any session end, and in a class the followers' pages run
                # every half second, so a student's click often found its file gone. Hashing the file on
                # each run of this step costs milliseconds; unchanged bytes keep one stored copy.
                st.download_button(t(f"handout_download_{fmt}"), data=build.data,
                                   file_name=file_name(choices, fmt),
                                   mime=FORMATS[fmt], key=f"lesson_take_home_{fmt}", on_click="ignore",
                                   icon=":material/download:")
                seconds = build.seconds()  # "made in 0 s" read as nothing made
                st.caption(t("follow_ready", seconds=seconds) if seconds >= 1 else t("follow_ready_quick"))
            elif build is not None and build.running:
                st.fragment(_building, run_every=TAKE_HOME_POLL)(key, fmt)
            else:
                if build is not None and build.error is not None:
                    st.error(t("follow_failed", what=t(f"follow_what_{fmt}"), reason=reason(build.error)))
                st.button(t(f"follow_make_{fmt}"), key=f"lesson_make_{fmt}", on_click=_make,
                          args=(key, choices, ctx.bundle, fmt), icon=":material/build:")
                last = take_homes().last_seconds(fmt)
                st.caption(sentences(t("follow_make_help"), t("follow_took", seconds=last) if last is not None
                                     else t(f"follow_first_{fmt}")))


def show_code(step: Step, ctx: Context) -> None:
    """The step's code: its hook lines first, then the set-up every step shares (folded), and the
    whole runnable file to download; every line fits 88 columns, so nothing scrolls sideways."""
    code = lesson_code(step, ctx)
    st.caption(t("lesson_code"))
    st.code(code.steps.strip("\n"), language="python")
    with st.expander(t("lesson_code_setup"), expanded=False, key="lesson_setup"):
        st.code(code.setup.rstrip("\n"), language="python")
    st.download_button(t("lesson_code_download"), code.full, file_name=f"vizhooks_lesson_{step.id}.py",
                       mime="text/x-python", key="lesson_download", icon=":material/download:")


def to_step(n: int) -> None:
    st.session_state["lesson_step"] = step_index(n)


def the_plan() -> tuple[int, ...]:
    """This session's lesson plan (the link's ``?plan=``, the form, or the teacher's): step numbers in
    order; empty for the whole lesson."""
    return tuple(int(n) for n in st.session_state.get("lesson_plan") or ())


def walked() -> list[int]:
    """The step numbers Next and Back walk: the plan's, else every step's."""
    return list(the_plan()) or list(range(1, len(STEPS) + 1))


def _picked_plan() -> None:
    st.session_state["lesson_plan"] = tuple(st.session_state["lesson_plan_pick"])


def _picked_preset() -> None:
    key = st.session_state.get("lesson_preset")
    if key:
        st.session_state["lesson_plan"] = preset_plan(key)
        st.session_state["lesson_step"] = preset_plan(key)[0]
    st.session_state["lesson_preset"] = None


def preset_option(key: str) -> str:
    """A preset as the form offers it: its name, the lesson it is for, its steps' minutes and what is
    left for discussion (the name promises no number of its own: every figure comes from steps.py)."""
    lesson, minutes, spare = preset_minutes(key)
    return t("plan_preset_option", name=t(key), lesson=lesson, minutes=minutes, spare=spare)


def option(n: int) -> str:
    step = STEPS[n - 1]
    return t("plan_step_option", n=n, title=t(f"lesson_{step.id}_title"), level=t(f"plan_level_{step.level}"),
             minutes=step.minutes)


def plan_form() -> None:
    """The teacher's lesson plan: a preset to start from, the steps in order (each with its level and
    minutes) and the plan's total time, kept in the link."""
    with st.expander(t("plan_header"), expanded=bool(the_plan()), key="lesson_plan_form"):
        st.caption(t("plan_help"))
        presets = [key for key, _ in PRESETS]
        st.selectbox(t("plan_preset"), presets, index=None, key="lesson_preset", on_change=_picked_preset,
                     format_func=preset_option)
        st.session_state["lesson_plan_pick"] = list(the_plan())
        st.multiselect(t("plan_steps"), range(1, len(STEPS) + 1), key="lesson_plan_pick", select_all=select_all(),
                       on_change=_picked_plan, format_func=option)
        steps = plan_steps(the_plan())
        if the_plan():
            st.caption(t("plan_total", steps=len(steps), minutes=plan_minutes(steps)))
        else:
            st.caption(t("plan_empty"))


def step_table(rows: list[dict[str, Any]], key: str) -> None:
    """A step's small table: Streamlit's data grid (sorted by a click), or in present mode a plain table whose
    type grows with the page's (the grid draws on a canvas at its own 13 px, which the back row cannot read)."""
    if present_on():
        import pandas as pd

        st.table(pd.DataFrame(rows), hide_index=True, width="content")
    else:
        st.dataframe(rows, hide_index=True, key=key)


def show_live_part(step: Step, ctx: Context) -> None:
    """The step's live part, on this photo and these layers."""
    analysis, c, digest = ctx.analysis, ctx.choices, ctx.digest
    layers = [name for name in c.layers if name in analysis.activations]
    if step.live == "hello":
        st.caption(t("lesson_hello_caption"))
        modules = dict(ctx.bundle.model.named_modules())
        step_table([{t("lesson_col_layer"): name, t("lesson_col_module"): type(modules[name.split("#")[0]]).__name__,
                     t("lesson_col_shape"): "×".join(map(str, analysis.activations[name].shape))}
                    for name in layers], "lesson_hello")
    elif step.live == "maps":
        maps.show(ctx)
    elif step.live == "prepost":
        layer = layers[0]
        data = shown_photo(c)[0]  # a follower's is the teacher's: the digest names it in the shared cache
        assert data is not None  # the analysis was made from it
        before = get_analysis(c.model, digest, data, c.size, (layer,), "input")
        left, right = st.columns(2)
        for col, act, head, what in ((left, before.activations[layer], "lesson_prepost_input", "input"),
                                     (right, analysis.activations[layer], "lesson_prepost_output", "output")):
            col.caption(t(head, layer=layer))
            col.image(grid_png(act, ("lesson", c.model, digest, c.size, what, layer), c.channels, c.grid_order, c.cmap,
                               c.norm, c.columns, layer))
    elif step.live == "table":
        table.show(ctx)
    elif step.live == "convolution":
        convolution.show(ctx)
    elif step.live == "gradients":
        gradients.show(ctx)
    elif step.live == "clamp":
        intervene.show_clamp(ctx, layers, class_picker(ctx.bundle, analysis))
    elif step.live == "backward":
        backward.show(ctx)
    elif step.live == "gradcam":
        gradcam.show(ctx)
    elif step.live == "sanity":
        show_sanity(ctx, layers[-1])
    elif step.live == "patching":
        show_patching(ctx, layers)
    elif step.live == "relevance":
        layer, target = layers[-1], class_picker(ctx.bundle, analysis)
        rows = cached(("lesson-relevance", c.model, digest, c.size, layer, target),
                      lambda: top_relevance(get_bundle(c.model), analysis.x, layer, target), lambda _: 256)
        st.caption(t("lesson_relevance_caption", layer=layer, label=shown_labels(ctx.bundle)[target]))
        step_table([{t("lesson_col_channel"): channel, t("lesson_col_relevance"): score} for channel, score in rows],
                   "lesson_relevance")
    elif step.live == "concepts":
        show_concepts(ctx, layers[-1])
    elif step.live == "audit":
        layer, target = layers[-1], class_picker(ctx.bundle, analysis)
        found = cached(("lesson-audit", c.model, digest, c.size, layer, target),
                       lambda: sticker_heat(get_bundle(c.model), analysis.x, layer, target), lambda _: 256)
        st.caption(t("lesson_audit_caption", layer=layer, label=shown_labels(ctx.bundle)[target]))
        headers, rows = sticker_table(found, shown_labels(ctx.bundle))
        step_table([dict(zip(headers, row, strict=True)) for row in rows], "lesson_audit")
    elif step.live == "remove":
        layer = layers[0]
        counts = cached(("hook-calls", c.model, digest, c.size, layer),
                        lambda: hook_calls_demo(get_bundle(c.model).model, analysis.x, layer), lambda _: 64)
        st.markdown(f"- {t('lesson_remove_forgot', calls=counts['forgot'])}\n"
                    f"- {t('lesson_remove_removed', calls=counts['removed'])}")


def show_patching(ctx: Context, layers: list[str]) -> None:
    """Each chosen layer of photo A taken from photo B in turn: B's answer restored, as a line (the
    lesson's "patching" code prints the same numbers)."""
    c, analysis = ctx.choices, ctx.analysis
    data, path = photo_b()
    if data is None:
        st.info(t("lesson_patching_none"))
        return
    digest_b = image_digest(data)

    def make() -> list[PatchResult]:
        bundle = get_bundle(c.model)
        source = patch_source(bundle, analysis.picture, vz.load_image(data))
        return patch_sweep(bundle, analysis.x, source, layers)

    with st.spinner(nt("patching_running", len(layers))):
        runs = cached(("lesson-patching", c.model, ctx.digest, digest_b, c.size, tuple(layers)), make,
                      lambda rs: tensor_bytes(x for r in rs for x in (r.logits, r.clean, r.source)))
    left, right = st.columns([1, 3])
    left.image(vz.load_image(data), caption=t("lesson_patching_photo_b", photo=Path(path).name))
    with right:
        compare.show_sweep(runs, shown_labels(ctx.bundle))


def show_concepts(ctx: Context, layer: str) -> None:
    """Concepts of ``layer`` over random crops of this photo (the lesson's "concepts" code prints the same
    crops and channels): each concept's crops with the most of it, and its strongest channels."""
    c, analysis = ctx.choices, ctx.analysis
    with st.spinner(t("lesson_concepts_title")):
        found = cached(("lesson-concepts", c.model, ctx.digest, c.size, layer),
                       lambda: photo_concepts(get_bundle(c.model), analysis.picture, layer, c.size),
                       lambda f: f.bank.nbytes + f.coefficients.nbytes + 64 * len(f.crops))
    st.caption(t("lesson_concepts_caption", k=LESSON_CONCEPTS, layer=layer, crops=LESSON_CROPS))
    for strip, caption in concept_strips(found, analysis.picture):
        st.image(strip, caption=caption)


#: Overlays per row in the sanity step's strip.
SANITY_COLUMNS = 4


def show_sanity(ctx: Context, layer: str) -> None:
    """Grad-CAM of the deepest chosen layer, then after each stage of a copy is re-initialised, each
    with its Spearman correlation with the original (the lesson's "sanity" code prints the same)."""
    analysis, c = ctx.analysis, ctx.choices
    target = chosen_target()
    target = int(analysis.logits[0].argmax()) if target is None else target
    try:
        with st.spinner(t("lesson_sanity_title")):
            result = cached(("lesson-sanity", c.model, ctx.digest, c.size, layer, target),
                            lambda: lesson_sanity(get_bundle(c.model), analysis.x, layer, target), sanity_bytes)
    except ExplainError as exc:  # a layer without a spatial map (tokens): the step says so, the page goes on
        if exc.code != "explain_layer":
            raise
        st.info(t("lesson_sanity_none", layer=layer))
        return
    labels = shown_labels(ctx.bundle)
    st.caption(t("lesson_sanity_caption", layer=layer, label=labels[target]))
    maps = result.maps["gradcam"]
    captions = [t("lesson_sanity_original")] + [t("lesson_sanity_after", stage=stage, rho=rho) for stage, rho in
                                                zip(result.stages, result.correlations["gradcam"], strict=True)]
    for start in range(0, len(maps), SANITY_COLUMNS):
        for col, cam, caption in zip(st.columns(SANITY_COLUMNS), maps[start:start + SANITY_COLUMNS],
                                     captions[start:start + SANITY_COLUMNS], strict=False):
            col.image(image_to_png(channel_overlay(analysis.picture, cam, 0.5, "jet")), caption=caption)


def _picked_step() -> None:
    to_step(st.session_state["lesson_pick"])


def step_nav(n: int) -> None:
    """Present mode's row above the step: Back, the list of steps, Next."""
    back, pick, nxt = st.container(key=NAV_KEY).columns([1, 3, 1], vertical_alignment="bottom")
    order = walked()
    at = order.index(n)
    back.button(t("lesson_back"), key="lesson_back_top", disabled=at == 0, on_click=to_step,
                args=(order[max(at - 1, 0)],))
    st.session_state["lesson_pick"] = n
    order = walked()
    at = order.index(n)
    pick.selectbox(t("lesson_steps"), order, key="lesson_pick", on_change=_picked_step,
                   format_func=lambda i: f"{order.index(i) + 1} · {t(f'lesson_{STEPS[i - 1].id}_title')}")
    nxt.button(t("lesson_next"), key="lesson_next_top", disabled=at == len(order) - 1, on_click=to_step,
               args=(order[min(at + 1, len(order) - 1)],))


def show(ctx: Context) -> None:
    order = walked()
    n = step_index(st.session_state.get("lesson_step", 1))
    if n not in order:  # a step the plan leaves out: its first step
        n = order[0]
        st.session_state["lesson_step"] = n
        page_moved("lesson_step")  # a follower stays following: the page moved it, not the student
    at = order.index(n)
    step = STEPS[n - 1]
    heading = t("lesson_step", n=at + 1, total=len(order), title=t(f"lesson_{step.id}_title"))
    scroll_to_step(n, heading)  # Next and Back land on the new step's heading
    if present_on():
        step_nav(n)
    elif not st.session_state.get("_class_code") or st.session_state.get("_class_teacher"):
        plan_form()  # the teacher's (a follower takes the teacher's plan)
    st.subheader(heading, anchor=step_anchor(n))
    st.markdown(t(f"lesson_{step.id}_text"))
    show_live_part(step, ctx)
    show_code(step, ctx)
    if not poll(step.id):  # in a class, the question is the class's poll
        st.markdown(f"**{t('lesson_question')}** {t(f'lesson_{step.id}_q')}")
    if not answer_hidden(step.id):  # a student in a class sees it once the teacher reveals
        # one expander per step (its own key): an answer opened on one step is not open on the next
        with st.expander(t("lesson_answer"), expanded=False, key=f"lesson_answer_{step.id}"):
            st.markdown(t(f"lesson_{step.id}_a"))
    back, link, nxt = st.columns([1, 2, 1])
    back.button(t("lesson_back"), key="lesson_back", disabled=at == 0, on_click=to_step,
                args=(order[max(at - 1, 0)],))
    nxt.button(t("lesson_next"), key="lesson_next", disabled=at == len(order) - 1, on_click=to_step,
               args=(order[min(at + 1, len(order) - 1)],))
    query = {**st.session_state.get("_query", {}), "view": "lesson", "step": str(n)}
    link.markdown(f"[{t('lesson_link')}](?{urlencode(query)})")
    take_home(ctx)


VIEW = View("lesson", group="learn", order=10, label="view_lesson", show=show)
