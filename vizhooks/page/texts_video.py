"""The video source's sentences, English and 简体中文; merged into texts.EN and texts_zh.ZH."""

from __future__ import annotations

EN: dict[str, str] = {
    "source_video": "Video",
    "video_upload": "Your clip",
    "video_upload_help": "MP4, WebM, AVI, MOV or an animated GIF, up to {mb} MB and {seconds} seconds.",
    "video_frames": "Frames to sample",
    "video_frames_help": (
        "Frames are taken evenly across the clip. Every one goes through the model once, in batches; "
        "more frames take longer and use more memory."
    ),
    "no_video": (
        "Upload a clip in the sidebar to start: MP4, WebM, AVI, MOV or GIF, up to {mb} MB and {seconds} s. "
        "Every sampled frame goes through the model once; then the slider moves through time without "
        "running it again."
    ),
    "video_decoding": "Decoding the clip…",
    "video_decoding_n": "Decoding the clip: frame {i} of {n}",
    "video_capturing": "Running the model on {n} frames in batches…",
    "video_capturing_n": "Running the model: {i} of {n} frames",
    "video_cams": "Grad-CAM for {n} frames: one backward pass each…",
    "video_cams_n": "Grad-CAM: frame {i} of {n}",
    "video_summary": (
        "{n} of {total} frames, sampled evenly from {seconds:.1f} s at {fps:.3g} frames/s ({w} × {h}). "
        "All of them were captured once; moving the slider only redraws."
    ),
    "video_play": "Play",
    "video_pause": "Pause",
    "video_frame": "Frame",
    "video_frame_help": "Pick one of the {n} sampled frames; Play steps through them.",
    "video_at": "Frame {i} of {n}, at {s:.2f} s",
    "video_target_each": "each frame's top class",
    "video_target_help": (
        "The class whose logit is differentiated. By default each frame uses its own top class; pick one "
        "to follow the same class through the clip. The maps of all frames are made once, then cached."
    ),
    "video_export": "Export",
    "video_export_layer": "Layer for the movie",
    "video_export_fps": "Frames per second",
    "video_make_movie": "Make a movie of this layer",
    "video_encoding": "Encoding the grids of {layer} over time…",
    "video_download_movie": "Download the movie ({ext})",
    "video_download_npz": "Download every frame's activations (.npz)",
    "video_download_npz_help": "One float32 array (T, C, H, W) per layer, plus __times__: seconds of each frame.",
    "bad_video": "This clip could not be used: {reason}",
}

ZH: dict[str, str] = {
    "source_video": "视频",
    "video_upload": "你的视频",
    "video_upload_help": "MP4、WebM、AVI、MOV 或 GIF 动图，最大 {mb} MB、{seconds} 秒。",
    "video_frames": "抽取帧数",
    "video_frames_help": "在整段视频中均匀抽帧。每一帧都会分批送入模型一次；帧数越多，耗时越长，占用内存也越多。",
    "no_video": (
        "请在侧边栏上传一段视频：MP4、WebM、AVI、MOV 或 GIF，最大 {mb} MB、{seconds} 秒。"
        "每个抽取的帧只经过模型一次；之后拖动滑块浏览时间轴，不会再次运行模型。"
    ),
    "video_decoding": "正在解码视频…",
    "video_decoding_n": "正在解码视频：第 {i}/{n} 帧",
    "video_capturing": "正在分批对 {n} 帧运行模型…",
    "video_capturing_n": "正在运行模型：已完成 {i}/{n} 帧",
    "video_cams": "正在为 {n} 帧计算 Grad-CAM：每帧一次反向传播…",
    "video_cams_n": "Grad-CAM：第 {i}/{n} 帧",
    "video_summary": (
        "这段视频长 {seconds:.1f} 秒、每秒 {fps:.3g} 帧（{w} × {h}），共 {total} 帧，从中均匀抽取了 {n} 帧。"
        "这些帧都已一次性捕获好，拖动滑块只会重新绘图，不会重新运行模型。"
    ),
    "video_play": "播放",
    "video_pause": "暂停",
    "video_frame": "帧",
    "video_frame_help": "在 {n} 个抽取的帧中选择一帧；点击“播放”逐帧前进。",
    "video_at": "第 {i}/{n} 帧，位于 {s:.2f} 秒",
    "video_target_each": "每帧各自的 Top-1 类别",
    "video_target_help": (
        "对哪个类别的 logit 求导。默认每帧使用它自己的 Top-1 类别；选定一个类别即可在整段视频中跟踪它。"
        "所有帧的热力图只计算一次，之后从缓存读取。"
    ),
    "video_export": "导出",
    "video_export_layer": "用于动画的层",
    "video_export_fps": "每秒帧数",
    "video_make_movie": "为这一层生成动画",
    "video_encoding": "正在把 {layer} 随时间变化的网格编码成视频…",
    "video_download_movie": "下载动画（{ext}）",
    "video_download_npz": "下载所有帧的激活值（.npz）",
    "video_download_npz_help": "每层一个 float32 数组 (T, C, H, W)，另有 __times__：每帧所在的秒数。",
    "bad_video": "无法使用这段视频：{reason}",
}
