"""The live source's sentences, English and 简体中文; merged into texts.EN and texts_zh.ZH."""

from __future__ import annotations

EN: dict[str, str] = {
    "source_live": "Live",
    "live_intro": (
        "**Live camera.** Your camera streams to the server; every frame runs through {model} up to the "
        "chosen layer (a hook on that one layer, the rest of the network skipped) and comes back beside the "
        "layer's feature maps. Press **Start** and allow the camera; settings change while it plays."
    ),
    "live_top": "The camera sees",
    "live_top_value": "{label} · {p:.0%}",
    "live_layer": "Layer",
    "live_layer_help": "One of the layers chosen in the sidebar; with none chosen, the model's quick tour.",
    "live_mode": "Show",
    "live_mode_grid": "16 channels beside the picture",
    "live_mode_overlay": "One channel over the picture",
    "live_pick": "Channels",
    "live_pick_first": "The first 16",
    "live_pick_top": "The 16 most active (largest mean)",
    "live_channel": "Channel",
    "live_size": "Model input (shorter side, pixels)",
    "live_size_help": (
        "Smaller runs faster. At 160 pixels a layer in the middle of resnet18 keeps up with a camera on "
        "two CPU cores."
    ),
    "live_opacity": "Heat map opacity",
    "live_fixed": (
        "{name} needs {side} × {side} pixels: the centre square of the camera picture is used and the "
        "size setting does not apply."
    ),
    "live_fps": "Frames per second",
    "live_latency": "Latency",
    "live_latency_value": "{ms:.0f} ms",
    "live_processed": "Frames processed",
    "live_dropped": "Dropped for other users",
    "live_dropped_help": "Frames given up because another session was using the shared model at that moment.",
    "live_skipped": "Skipped while busy",
    "live_skipped_help": (
        "Frames the camera sent while your previous frame was still being computed: skipped so the picture stays "
        "current (normal on a slow machine)."
    ),
    "live_size_where": "Model input size: set it in the live view (smaller is faster).",
    "live_stats": (
        "{fps:.1f} frames per second processed over the last 2 seconds; latency {latency:.0f} ms on average, "
        "{last:.0f} ms for the newest frame; {processed} frames processed, {dropped} dropped while another "
        "person was using the model, {skipped} skipped while the previous frame was still running."
    ),
    "live_idle": "Not streaming. Press **Start** under the video to begin; the measured numbers appear here.",
    "live_https": (
        "Browsers give the camera only to pages on HTTPS or on localhost, and this page is plain HTTP on "
        "{host}. Serve it over HTTPS (behind a reverse proxy, or `streamlit run app.py --server.sslCertFile "
        "cert.pem --server.sslKeyFile key.pem`), or, for a classroom trial, start Chrome with "
        "`--unsafely-treat-insecure-origin-as-secure={origin}`."
    ),
    "live_ice_bad": (
        "{reason} Until that is fixed the stream uses no STUN or TURN server, which works on this computer "
        "and on a local network."
    ),
    "live_failed": "The live view cannot show this: {reason}",
    "live_failed_run": (
        "The model could not process the camera's frames (out of memory or an internal error), so the "
        "picture comes back unchanged. Try a smaller input size or another layer."
    ),
    # the video component's own buttons and messages
    "live_c_start": "Start",
    "live_c_stop": "Stop",
    "live_c_select_device": "Select device",
    "live_c_media_api_not_available": "This browser gives no camera to this page: it needs HTTPS or localhost.",
    "live_c_device_ask_permission": "Please allow this page to use the camera.",
    "live_c_device_not_available": "No camera was found.",
    "live_c_device_access_denied": "Camera access was denied.",
    "live_c_turn_camera_on": "Turn camera on",
    "live_c_turn_camera_off": "Turn camera off",
    "live_c_mute_microphone": "Mute microphone",
    "live_c_unmute_microphone": "Unmute microphone",
    "live_c_select_camera": "Select camera",
    "live_c_select_microphone": "Select microphone",
}

ZH: dict[str, str] = {
    "source_live": "实时",
    "live_intro": (
        "**实时摄像头**：摄像头的画面实时传到服务器，每一帧都送进 {model}，只算到所选的那一层（钩子只挂在这一层上，"
        "后面的网络直接跳过），再和这一层的特征图并排传回来。点击 **开始** 并允许浏览器使用摄像头；"
        "播放过程中也可以随时调整设置。"
    ),
    "live_top": "摄像头看到的是",
    "live_top_value": "{label} · {p:.0%}",
    "live_layer": "层",
    "live_layer_help": "从侧边栏选中的层里选一个；侧边栏一个层都没选时，从这个模型“导览”中的层里选。",
    "live_mode": "显示",
    "live_mode_grid": "画面旁边显示 16 个通道",
    "live_mode_overlay": "一个通道叠加在画面上",
    "live_pick": "通道",
    "live_pick_first": "前 16 个",
    "live_pick_top": "最活跃的 16 个（均值最大）",
    "live_channel": "通道",
    "live_size": "模型输入（短边，像素）",
    "live_size_help": "越小越快。输入为 160 像素时，resnet18 中间的层在两个 CPU 核上也能跟上摄像头。",
    "live_opacity": "热力图不透明度",
    "live_fixed": "{name} 需要 {side} × {side} 像素的输入：使用摄像头画面中央的正方形，尺寸设置不起作用。",
    "live_fps": "每秒帧数",
    "live_latency": "延迟",
    "live_latency_value": "{ms:.0f} 毫秒",
    "live_processed": "已处理帧数",
    "live_dropped": "因他人占用而丢弃",
    "live_dropped_help": "其他会话正在使用共享模型，这些帧只好放弃。",
    "live_skipped": "忙碌时跳过",
    "live_skipped_help": "上一帧还在计算时摄像头送来的帧：跳过它们，画面才能保持最新（机器较慢时属正常现象）。",
    "live_size_where": "模型输入尺寸在实时视图中设置（越小越快）。",
    "live_stats": (
        "最近 2 秒每秒处理 {fps:.1f} 帧；平均延迟 {latency:.0f} 毫秒，最新一帧 {last:.0f} 毫秒；已处理 {processed} 帧，"
        "因其他人正在使用模型而丢弃 {dropped} 帧，因上一帧仍在计算而跳过 {skipped} 帧。"
    ),
    "live_idle": "尚未开始传输。点视频下方的 **开始**；测得的数字会显示在这里。",
    "live_https": (
        "浏览器只允许 HTTPS 页面或 localhost 上的页面使用摄像头，而这个页面是 {host} 上的普通 HTTP。请通过 HTTPS "
        "提供页面（放在反向代理后面，或运行 `streamlit run app.py --server.sslCertFile cert.pem --server.sslKeyFile "
        "key.pem`）；课堂上临时试用时，也可以用 `--unsafely-treat-insecure-origin-as-secure={origin}` 启动 Chrome。"
    ),
    "live_ice_bad": (
        "{reason} 在修正之前，传输不经过 STUN 或 TURN 服务器，在本机和局域网内可以正常使用。"
    ),
    "live_failed": "实时视图无法显示：{reason}",
    "live_failed_run": (
        "模型无法处理摄像头的画面（内存不足或内部错误），因此画面原样传回。请试试更小的输入尺寸或换一个层。"
    ),
    "live_c_start": "开始",
    "live_c_stop": "停止",
    "live_c_select_device": "选择设备",
    "live_c_media_api_not_available": (
        "浏览器不允许这个页面使用摄像头：只有通过 HTTPS 或 localhost 打开的页面才能用。"
    ),
    "live_c_device_ask_permission": "请允许这个页面使用摄像头。",
    "live_c_device_not_available": "没有找到摄像头。",
    "live_c_device_access_denied": "摄像头权限被拒绝。",
    "live_c_turn_camera_on": "打开摄像头",
    "live_c_turn_camera_off": "关闭摄像头",
    "live_c_mute_microphone": "关闭麦克风",
    "live_c_unmute_microphone": "打开麦克风",
    "live_c_select_camera": "选择摄像头",
    "live_c_select_microphone": "选择麦克风",
}
