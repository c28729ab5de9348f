"""Shared fixtures. No test may reach the network: the guard in tests/netguard is installed here,
before anything else is imported, and through PYTHONPATH in every Python process the tests start;
it refuses name look-ups and connections that leave this machine. The torch cache points to an
empty temporary folder."""

from __future__ import annotations

import sys
from pathlib import Path

_GUARD = str(Path(__file__).resolve().parent / "netguard")
if _GUARD not in sys.path:
    sys.path.insert(0, _GUARD)
import vizhooks_netguard  # noqa: E402 - the guard must come before every other import

vizhooks_netguard.install()
vizhooks_netguard.export()  # PYTHONPATH and VIZHOOKS_OFFLINE=1, inherited by every child

import pytest  # noqa: E402 - after the guard, see above
import torch  # noqa: E402

from vizhooks import load_model  # noqa: E402

#: Tests left out of `make test-fast` besides those marked by path below (tests/e2e: browser,
#: test_benchmarks.py: bench, the wheel tests of test_packaging.py: packaging). Node ids or their
#: prefixes (a module, a test with all its parameters). Chosen from each test's setup + call +
#: teardown, measured on our 2 shared cores: the longest tests (over ~1.5 s there), ~1,100 of the
#: ~1,200 s the loop took, while each module keeps its quick tests in the fast loop.
SLOW: tuple[str, ...] = (
    "tests/test_handout.py::test_the_notebook_runs_offline_with_the_fallback_sentence_and_the_photo",  # nbclient
    "tests/test_handout.py::test_the_notebook_prints_the_pages_forward_numbers",
    "tests/test_handout.py::test_the_notebook_prints_the_pages_gradient_numbers",
    "tests/test_handout.py::test_the_handout_is_one_file_with_every_step_and_no_request",
    "tests/test_handout.py::test_the_command_writes_the_lesson",
    "tests/test_handout.py::test_the_lesson_command_never_imports_streamlit_or_the_page",  # a fresh interpreter
    "tests/test_handout.py::test_the_lesson_of_other_families_in_chinese",
    "tests/test_analysis.py::test_analyse_resnet50_bottleneck_layers",
    "tests/test_analysis.py::test_analyse_what_input",
    "tests/test_analysis.py::test_picture_follows_resize_rule",
    "tests/test_analysis.py::test_analyse_default_size_and_x",
    "tests/test_analysis.py::test_layers_come_back_in_network_order",
    "tests/test_analysis.py::test_quick_picks_match_an_independent_grouping",
    "tests/test_analysis.py::test_architecture_convs_match_torchvision",
    "tests/test_app.py::test_default_view_shows_input_and_grids",
    "tests/test_app.py::test_display_changes_do_not_run_the_model",
    "tests/test_app.py::test_switch_model_layers_and_capture_kind",
    "tests/test_app.py::test_bad_uploads_show_an_error_and_the_page_recovers[empty.png--empty]",
    "tests/test_app.py::test_downloads_are_offered",
    "tests/test_app.py::test_every_view_renders[gradients]",
    "tests/test_app.py::test_every_view_renders[backward]",
    "tests/test_app.py::test_another_class_changes_gradcam_and_reruns_only_backward",
    "tests/test_app.py::test_code_snippet_runs_as_written_and_matches_the_page",
    "tests/test_app.py::test_failure_inside_the_forward_pass_is_one_message",
    "tests/test_app.py::test_simulated_cuda_out_of_memory",
    "tests/test_app.py::test_failure_in_backward_leaves_the_model_clean",
    "tests/test_app.py::test_capture_over_the_memory_budget_is_refused_with_a_sentence",
    "tests/test_app_models.py::test_every_view_renders_for",
    "tests/test_app_models.py::test_link_to_vgg16_layers",
    "tests/test_app_models.py::test_operator_models_on_the_page",
    "tests/test_app_models.py::test_a_broken_operator_checkpoint_is_one_sentence",
    "tests/test_app_models.py::test_code_view_snippet_runs_and_matches_the_page",
    "tests/test_app_video.py::test_clip_is_captured_once_in_batches_and_the_slider_runs_nothing",
    "tests/test_app_video.py::test_play_steps_through_frames_without_the_model",
    "tests/test_app_video.py::test_exports_movie_and_npz",
    "tests/test_app_views.py::test_intervene_view",
    "tests/test_app_views.py::test_intervene_metric_is_the_library_answer",
    "tests/test_app_views.py::test_compare_view",
    "tests/test_app_views.py::test_compare_similarity_is_cosine",
    "tests/test_app_views.py::test_lesson_next_back_and_link",
    "tests/test_app_views.py::test_lesson_snippets_run_and_print_what_the_page_shows",
    "tests/test_app_views.py::test_channel_atlas_view_with_the_shipped_atlas",
    "tests/test_app_views.py::test_channel_atlas_view_says_how_to_make_one",
    "tests/test_architecture.py::test_import_vizhooks_imports_no_optional_or_page_module",
    "tests/test_architecture.py::test_reading_a_clip_module_does_not_load_opencv_until_a_clip_is_read",
    "tests/test_cam.py::test_grad_cam_matches_formula[resnet18-layer4.1.conv2-None]",
    "tests/test_cam.py::test_grad_cam_matches_formula[resnet50-layer4.2.conv3-None]",
    "tests/test_cam.py::test_frame_cams_gives_each_frame_its_own_class_and_map",
    "tests/test_capture.py::test_every_conv_matches_feature_extractor",
    "tests/test_capture.py::test_input_capture_uses_pre_hook",
    "tests/test_capture.py::test_threads_each_get_their_own_activations",
    "tests/test_cli.py::test_all_layers_png_and_npz_match_the_library",
    "tests/test_cli.py::test_input_capture_and_size",
    "tests/test_cli.py::test_default_layers",
    "tests/test_cli.py::test_real_entry_point",
    "tests/test_cli.py::test_any_torchvision_model_all_convs",
    "tests/test_cli.py::test_own_checkpoint_and_labels",
    "tests/test_cli.py::test_visualize_writes_the_library_images",
    "tests/test_cli.py::test_maps_is_the_default_command",
    "tests/test_convolution.py::test_value_is_the_convs_own_and_the_window_is_unfolds[vit_b_16-conv_proj]",
    "tests/test_convolution.py::test_following_steps_are_the_captured_outputs[vit_b_16-conv_proj]",
    "tests/test_exemplars.py::test_index_equals_brute_force",
    "tests/test_exemplars.py::test_interrupted_run_resumes_to_the_same_index",
    "tests/test_exemplars.py::test_receptive_field_through_permute_and_channel_mixing",
    "tests/test_exemplars.py::test_convnext_receptive_fields",
    "tests/test_exemplars.py::test_cli_help_and_light_import",
    "tests/test_exemplars_ray.py::test_ray_engine_gives_the_local_index",  # starts Ray: ~25 s each
    "tests/test_exemplars_ray.py::test_ray_engine_resumes_and_skips_done_files",
    "tests/test_featurevis.py::test_objective_rises_far_above_the_starting_picture",
    "tests/test_featurevis.py::test_each_picture_of_a_batch_drives_its_own_channel_hardest",
    "tests/test_featurevis.py::test_channel_layouts_of_tokens_and_channels_last_maps",
    "tests/test_featurevis.py::test_same_seed_same_picture_other_seed_other_picture_global_rng_untouched",
    "tests/test_featurevis.py::test_without_transforms_the_picture_is_lucents",
    "tests/test_featurevis.py::test_with_standard_transforms_the_objective_matches_lucents",
    "tests/test_gradients.py::test_capture_gradients_matches_autograd_grad",
    "tests/test_gradients.py::test_bn1_gradient_is_taken_before_the_inplace_relu",
    "tests/test_gradients.py::test_gradient_pass_target_and_logits",
    "tests/test_gradients.py::test_batchnorm_statistics_untouched[grad_cam-ok]",
    "tests/test_gradients.py::test_batchnorm_statistics_untouched[backward_report-ok]",
    "tests/test_gradients.py::test_backward_report_resnet18_children",
    "tests/test_gradients.py::test_naive_full_backward_hook_on_bn1_really_fails",
    "tests/test_gradients.py::test_threads_get_the_same_results_as_sequential_calls",
    "tests/test_i18n.py::test_chinese_page_has_no_english_sentences",
    "tests/test_intervene.py::test_clamp_before_an_inplace_relu_in_resnet18",
    "tests/test_layers.py::test_defaults_and_resolution",
    "tests/test_live.py::test_settings_changed_between_frames_apply_to_the_next",
    "tests/test_markers.py::test_each_marker_selects_its_tests_and_the_fast_loop_keeps_the_quick_ones",
    "tests/test_models.py::test_state_dict_file_round_trips",
    "tests/test_models.py::test_wrong_architecture_is_one_short_sentence",
    "tests/test_models.py::test_cached_checkpoint_without_batchnorm_counters_loads",
    "tests/test_models.py::test_env_file_first_and_mismatch_falls_through",
    "tests/test_models.py::test_silent_server_is_bounded",
    "tests/test_models.py::test_hung_name_lookup_is_bounded",
    "tests/test_models.py::test_download_checks_hash_and_fills_cache",
    "tests/test_network_guard.py::test_streamlit_server_is_guarded",
    "tests/test_reliability.py::test_estimate_equals_a_real_capture",
    "tests/test_reliability.py::test_300_requests_keep_memory_hooks_figures_and_temp_files_bounded",
    "tests/test_reliability.py::test_failure_mid_backward_restores_everything",
    "tests/test_reliability.py::test_env_weights_problems_are_one_sentence",
    "tests/test_snippets.py::test_the_page_shows_the_code_that_ran",
    "tests/test_snippets.py::test_gradients_snippet_prints_the_pages_class_shapes_and_range",
    "tests/test_snippets.py::test_lesson_hook_snippets_print_what_the_lesson_shows[resnet18-tour-output-top1]",
    "tests/test_snippets.py::test_lesson_gradient_snippets_print_what_the_lesson_shows",
    "tests/test_summary.py::test_matches_torchinfo",
    "tests/test_summary.py::test_rows_order_and_calls",
    "tests/test_urlstate.py::test_any_torchvision_model_and_its_layers",
    "tests/test_video.py::test_capture_frames_equals_one_capture_per_frame",
    "tests/test_video.py::test_mixed_sizes_keep_frame_order_or_say_one_size",
    "tests/test_video.py::test_cli_writes_one_video_per_layer_and_the_npz",
    "tests/test_video.py::test_cli_gif_is_a_clip_only_with_several_frames",
    "tests/test_zoo.py::test_every_conv_matches_torch_fx",
    "tests/test_zoo.py::test_input_follows_the_size_rule[vgg11]",
    "tests/test_zoo.py::test_input_follows_the_size_rule[convnext_tiny]",
    "tests/test_zoo.py::test_input_follows_the_size_rule[swin_t]",
    "tests/test_zoo.py::test_vit_tokens_as_maps",
    "tests/test_zoo.py::test_giant_captures_are_refused_without_weights",
    "tests/test_zoo.py::test_budget_checks_allocate_no_weights",
)

#: Tests outside tests/e2e that drive Chromium.
BROWSER: tuple[str, ...] = (
    "tests/test_network_guard.py::test_chromium_resolves_no_names",
    "tests/test_app_convolution.py::test_the_first_conv_slides_over_the_photo_when_asked",
    "tests/test_app_convolution.py::test_maxpool_is_taken_apart_and_slides_when_asked",
    "tests/test_sanity.py::test_every_step_is_the_same_re_initialisation_done_by_hand",
    "tests/test_sanity.py::test_grad_cam_stops_correlating_once_the_model_is_random_and_the_shared_model_is_untouched",
    "tests/test_sanity.py::test_a_fully_random_resnet50_gives_finite_logits_and_maps",
    "tests/test_explain.py::test_cam_equals_torchcam[resnet50-gradcam]",
    "tests/test_explain.py::test_cam_equals_torchcam[resnet50-xgradcam]",
    "tests/test_explain.py::test_cam_equals_torchcam[resnet50-layercam]",
    "tests/test_explain.py::test_gradcampp_follows_the_paper_and_torchcam_loses_its_division[resnet50]",
    "tests/test_explain.py::test_scorecam_is_the_formula_and_torchcam_differs_only_in_mask_order[resnet50-layers1]",
    "tests/test_explain.py::test_guided_backprop_and_guided_gradcam_equal_hook_free_formulas[resnet50]",
    "tests/test_faithfulness.py::test_curves_equal_a_plain_loop_and_the_areas_numpys_trapezoid",
    "tests/test_faithfulness.py::test_infidelity_equals_captums_with_the_same_seed",
    "tests/test_app_explain.py::test_maps_are_the_librarys_and_come_only_on_the_button",
    "tests/test_app_explain.py::test_another_class_and_layer_redraw_the_maps",
    "tests/test_app_explain.py::test_scores_are_the_librarys_on_the_button",
    "tests/test_app_explain.py::test_sanity_check_is_the_librarys_on_the_button",
)


def _listed(nodeid: str, prefixes: tuple[str, ...]) -> bool:
    return any(nodeid == p or nodeid.startswith((p + "::", p + "[")) for p in prefixes)


@pytest.hookimpl(tryfirst=True)  # before -m deselects by these markers
def pytest_collection_modifyitems(config, items):
    """Marks by place, so `-m "not (browser or slow or packaging or bench)"` is the fast loop."""
    for item in items:
        path = Path(str(item.fspath)).relative_to(Path(__file__).resolve().parents[1]).as_posix()
        if path.startswith("tests/e2e/") or _listed(item.nodeid, BROWSER):
            item.add_marker(pytest.mark.browser)
        if path == "tests/test_benchmarks.py":
            item.add_marker(pytest.mark.bench)
        if path == "tests/test_packaging.py" and "installed" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.packaging)
        if _listed(item.nodeid, SLOW):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def _offline(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path_factory.mktemp("torch_home")))
    monkeypatch.setenv("VIZHOOKS_OFFLINE", "1")
    monkeypatch.delenv("VIZHOOKS_WEIGHTS", raising=False)


@pytest.fixture(scope="session")
def resnet18():
    return load_model("resnet18", weights="none", device="cpu")


@pytest.fixture(scope="session")
def resnet50():
    return load_model("resnet50", weights="none", device="cpu")


@pytest.fixture
def image_tensor():
    g = torch.Generator().manual_seed(1)
    return torch.randn(1, 3, 96, 128, generator=g)


# --- the page (AppTest): the helpers are in tests/helpers.py ---------------------------------------


@pytest.fixture
def media(monkeypatch):
    """{(mimetype, file name): bytes} of every file the page hands to Streamlit (images, downloads)."""
    from streamlit.runtime.media_file_manager import MediaFileManager

    found: dict = {}
    original = MediaFileManager.add

    def keep(self, path_or_data, mimetype, coordinates, file_name=None, is_for_static_download=False):
        found[(mimetype, file_name)] = path_or_data
        return original(self, path_or_data, mimetype, coordinates, file_name, is_for_static_download)

    monkeypatch.setattr(MediaFileManager, "add", keep)
    return found


@pytest.fixture
def fresh_results():
    """The page's results forgotten, its models kept: for a test that must see the page compute."""
    from tests.helpers import clear_results

    clear_results()


@pytest.fixture
def forward_passes(fresh_results):
    """Whole-network forward passes during the test, over cold results (see helpers.whole_passes)."""
    from tests.helpers import whole_passes

    with whole_passes() as seen:
        yield seen


@pytest.fixture
def fresh_caches():
    """Nothing the page keeps, before and after the test, models included (operator models)."""
    from tests.helpers import clear_caches

    clear_caches()
    yield
    clear_caches()


@pytest.fixture(params=["memory", "redis"])
def class_store(request):
    """A factory ``make(clock) -> Store`` of an empty class store, one per kind of store: the
    in-process one, and Redis (the session's redis-server on localhost, emptied for each test; it
    keeps its own time, so the clock moves only the class's timestamps)."""
    if request.param == "memory":
        from vizhooks.classroom import MemoryStore

        return lambda clock: MemoryStore(clock)
    import redis

    from vizhooks.classroom.redis_store import RedisStore

    url = request.getfixturevalue("redis_url")
    with redis.Redis.from_url(url) as client:
        client.flushdb()
    return lambda clock: RedisStore(url)


class RedisServer:
    """A real ``redis-server`` on a localhost port, its files in ``folder``: :meth:`start`,
    :meth:`stop`, and start again on the same port with the same files. ``persist``: an append-only
    file, so the data outlives a restart; otherwise nothing is written to disk."""

    def __init__(self, folder: Path, persist: bool = False) -> None:
        import shutil

        if shutil.which("redis-server") is None:
            pytest.fail("redis-server is not installed: `make redis` (part of `make test`) installs Debian's package.")
        self.folder, self.persist, self.port, self.process = folder, persist, 0, None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        import socket
        import subprocess
        import time

        import redis

        fresh = not self.port  # a restart keeps its port
        for _ in range(5 if fresh else 1):  # a free port can be taken by another process before redis binds it
            if fresh:
                with socket.socket() as sock:
                    sock.bind(("127.0.0.1", 0))
                    self.port = sock.getsockname()[1]
            disk = ["--appendonly", "yes", "--appendfsync", "always"] if self.persist else ["--appendonly", "no"]
            self.process = subprocess.Popen(
                ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", *disk,
                 "--dir", str(self.folder), "--logfile", str(self.folder / "redis.log")],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            client = redis.Redis(port=self.port, socket_connect_timeout=1, socket_timeout=1)
            deadline = time.monotonic() + 20
            while self.process.poll() is None and time.monotonic() < deadline:
                try:
                    client.ping()
                    client.close()
                    return self
                except redis.RedisError:
                    time.sleep(0.05)
            self.stop()
        log = (self.folder / "redis.log").read_text(errors="replace")[-2000:]
        raise RuntimeError(f"redis-server did not answer PING on port {self.port}; its log ends:\n{log}")

    def stop(self) -> None:
        """Shut the server down (SIGTERM: with ``persist`` its data is on disk) and wait for it."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=20)


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory):
    """The URL of a redis-server started once for the session (no persistence); a failure where
    redis-server is not installed."""
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server.url
    server.stop()


@pytest.fixture
def redis_server(tmp_path, request):
    """A redis-server of the test's own that the test may stop and start again; its data outlives a
    restart (appendonly) unless the test passes ``False`` (``parametrize(..., indirect=True)``)."""
    server = RedisServer(tmp_path, persist=getattr(request, "param", True)).start()
    yield server
    server.stop()
