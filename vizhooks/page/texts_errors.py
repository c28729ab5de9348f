"""The library's refusals as the page says them (``err_<code>`` for vizhooks.errors.CodedError's
codes), English and 简体中文; merged into texts.EN and texts_zh.ZH. A refusal without a code keeps its
English sentence on the English page and says ``err_generic`` on the others (details in the log)."""

from __future__ import annotations

EN: dict[str, str] = {
    "err_generic": "The details are in the server's log.",
    "err_image_empty": "The file is empty (0 bytes).",
    "err_image_pdf": "This is a PDF document, not an image. Export the page as PNG or JPEG first.",
    "err_image_html": "This is a web page (HTML), not an image. Save the picture itself, not the page.",
    "err_image_svg": "This is an SVG drawing, which vizhooks cannot read. Save it as PNG first.",
    "err_image_zip": "This is a zip archive (or a document such as .docx), not an image.",
    "err_image_text": "This is a text file, not an image.",
    "err_image_unknown": "This file is not an image vizhooks can read (try PNG, JPEG, WebP, BMP, GIF or TIFF).",
    "err_image_bomb": "This image has too many pixels; the limit is {limit} megapixels.",
    "err_image_too_large": (
        "This image is {width} x {height} pixels ({megapixels} megapixels); the limit is {limit} megapixels. "
        "Please use a smaller copy."
    ),
    "err_image_no_pixels": "This image has no pixels.",
    "err_image_damaged": "This image file is damaged and cannot be read.",
    "err_image_truncated": (
        "This image file is truncated or corrupt: only part of it could be read. Try saving or downloading it again."
    ),
    "err_video_empty": "The file is empty (0 bytes).",
    "err_video_too_big": "This video is over the limit of {limit} MB; trim it or save it at a lower resolution first.",
    "err_video_too_long": "This clip is {seconds} seconds long and the limit is {limit} seconds; trim it first.",
    "err_video_still": "This is a still picture ({kind}), not a video; open it as a photo instead.",
    "err_video_text": "This is a text file, not a video; use an MP4, WebM, AVI, MOV or GIF clip.",
    "err_video_unknown": "This file is not a video vizhooks can read; use an MP4, WebM, AVI, MOV or GIF clip.",
    "err_video_damaged": (
        "This {kind} file is truncated or damaged and cannot be read; try saving or downloading it again."
    ),
    "err_video_too_many_pixels": (
        "This video's frames are {width} x {height} pixels and the limit is {limit} megapixels; "
        "save a smaller copy first."
    ),
    "err_video_one_frame": "This GIF has one frame, a still picture; open it as a photo instead.",
    "err_video_truncated": (
        "This video is truncated or damaged: only {decoded} of its {frames} frames could be decoded, so save or "
        "download it again."
    ),
    "err_capture_too_large": (
        "{layers} layers of {model} at {width} x {height} pixels would need {need} MB for their feature maps; this "
        "server allows {limit} MB per request. Choose fewer layers or a smaller input size."
    ),
    "err_class_limit": (
        "This server already runs {limit} classes, its limit: end one, or ask the operator to raise "
        "VIZHOOKS_MAX_CLASSES."
    ),
    "err_class_model_large": "A shared model may hold at most {most} MB.",
    "err_class_unknown": "There is no class {class_code} (it may have ended).",
    "err_class_not_teacher": "Only the teacher of class {class_code} can do that.",
    "err_class_replayed": "That teacher action was already taken or is too old; do it again.",
    "err_gallery_full_photos": "The class gallery is full ({limit} photos).",
    "err_gallery_full_mb": "The class gallery is full ({limit} MB of photos).",
    "err_explain_model": "Explanations need a loaded model (a ModelBundle or a torch module).",
    "err_explain_method": "There is no explanation method {method!r}; choose from {known}.",
    "err_explain_target": "The class must be a number from 0 to {last}, not {target}.",
    "err_explain_setting": (
        "The setting {name} cannot be {value}; choose a whole number of at least 1 (or a listed choice)."
    ),
    "err_explain_layers": "This model has no convolution or block for a CAM; choose a layer for it.",
    "err_explain_layer": (
        "A CAM needs a layer whose output is a map of channels, and {layer} gives none; choose a convolution or "
        "a block."
    ),
    "err_explain_batch": "Explanations take one picture at a time, not {count}.",
    "err_explain_stage": "The model has no module {stage} to re-initialise for the sanity check.",
}

ZH: dict[str, str] = {
    "err_generic": "详细原因已写入服务器日志。",
    "err_image_empty": "这个文件是空的（0 字节）。",
    "err_image_pdf": "这是 PDF 文档，不是图片。请先把页面导出为 PNG 或 JPEG。",
    "err_image_html": "这是网页（HTML），不是图片。请保存图片本身，而不是整个网页。",
    "err_image_svg": "这是 SVG 矢量图，vizhooks 读不了。请先另存为 PNG。",
    "err_image_zip": "这是压缩包（或 .docx 之类的文档），不是图片。",
    "err_image_text": "这是文本文件，不是图片。",
    "err_image_unknown": "vizhooks 读不了这个文件（请使用 PNG、JPEG、WebP、BMP、GIF 或 TIFF 格式）。",
    "err_image_bomb": "这张图片的像素太多，上限是 {limit} 百万像素。",
    "err_image_too_large": (
        "这张图片是 {width} × {height} 像素（{megapixels} 百万像素），上限是 {limit} 百万像素。请换一张小一些的图片。"
    ),
    "err_image_no_pixels": "这张图片没有任何像素。",
    "err_image_damaged": "这个图片文件已损坏，无法读取。",
    "err_image_truncated": "这个图片文件不完整或已损坏，只能读出一部分。请重新保存或重新下载。",
    "err_video_empty": "这个文件是空的（0 字节）。",
    "err_video_too_big": "这段视频超过了 {limit} MB 的上限，请先剪短或降低分辨率后再保存。",
    "err_video_too_long": "这段视频长 {seconds} 秒，上限是 {limit} 秒，请先剪短。",
    "err_video_still": "这是一张静态图片（{kind}），不是视频；请把它作为照片打开。",
    "err_video_text": "这是文本文件，不是视频；请使用 MP4、WebM、AVI、MOV 或 GIF 格式的视频。",
    "err_video_unknown": "vizhooks 读不了这个视频；请使用 MP4、WebM、AVI、MOV 或 GIF 格式。",
    "err_video_damaged": "这个 {kind} 文件不完整或已损坏，无法读取；请重新保存或重新下载。",
    "err_video_too_many_pixels": (
        "这段视频每帧 {width} × {height} 像素，超过 {limit} 百万像素的上限；请先保存一个小一些的版本。"
    ),
    "err_video_one_frame": "这个 GIF 只有一帧，是一张静态图片；请把它作为照片打开。",
    "err_video_truncated": "这段视频不完整或已损坏：{frames} 帧中只解码出 {decoded} 帧，请重新保存或重新下载。",
    "err_capture_too_large": (
        "{model} 的 {layers} 个层在 {width} × {height} 像素下需要 {need} MB 来存放特征图，而这台服务器每个请求最多允许 "
        "{limit} MB。请少选几层，或调小输入尺寸。"
    ),
    "err_class_limit": (
        "这台服务器已经同时开了 {limit} 个课堂，达到上限：请先结束一个，或请管理员调高 VIZHOOKS_MAX_CLASSES。"
    ),
    "err_class_model_large": "分享的模型最多 {most} MB。",
    "err_class_unknown": "没有代码为 {class_code} 的课堂（可能已经下课）。",
    "err_class_not_teacher": "只有课堂 {class_code} 的老师才能这样做。",
    "err_class_replayed": "这个老师操作已经执行过或已过期，请重新操作一次。",
    "err_gallery_full_photos": "班级图库已满（{limit} 张图片）。",
    "err_gallery_full_mb": "班级图库已满（图片共 {limit} MB）。",
    "err_explain_model": "解释方法需要一个已加载的模型（ModelBundle 或 torch 模块）。",
    "err_explain_method": "没有名为 {method!r} 的解释方法；请从 {known} 中选择。",
    "err_explain_target": "类别必须是 0 到 {last} 之间的数字，而不是 {target}。",
    "err_explain_setting": "设置 {name} 不能是 {value}；请填至少为 1 的整数（或列出的选项之一）。",
    "err_explain_layers": "这个模型没有可供 CAM 使用的卷积层或模块；请为它指定一层。",
    "err_explain_layer": "CAM 需要输出为多通道特征图的层，而 {layer} 的输出不是；请选择一个卷积层或模块。",
    "err_explain_batch": "解释方法一次只处理一张图片，而不是 {count} 张。",
    "err_explain_stage": "模型中没有可在合理性检验中重新初始化的模块 {stage}。",
}
