"""A class's sentences (teacher, followers, gallery), English and 简体中文; merged into texts.EN and
texts_zh.ZH."""

from __future__ import annotations

EN: dict[str, str] = {
    "class_header": "Teach a class",
    "class_intro": (
        "Start a class and your students follow your page: view, lesson step, model, layers, display settings "
        "and your photo (nothing else of your session is shared). They can answer the lesson's questions and "
        "send you their photos."
    ),
    "class_passphrase": "Teacher passphrase",
    "class_passphrase_help": "This server asks for the passphrase its operator set (VIZHOOKS_TEACHER_KEY).",
    "class_start": "Start a class",
    "class_bad_passphrase": "That is not the teacher passphrase of this server.",
    "class_too_many_tries": "Too many tries: wait a minute before the next one.",
    "class_code": "Class code: **{code}**",
    "class_link": "Students open this link (or scan the code):",
    "class_qr_caption": "Class {code}",
    "class_followers": "{n} students following",
    "class_teacher_link": "Teacher link (a second device; keep it private)",
    "class_teacher_link_help": "Whoever opens this link leads the class with you. Never show it on the projector.",
    "class_end": "End class",
    "class_ended": "Class {code} has ended.",
    "class_unknown": "There is no class {code} (it may have ended); this is the ordinary page.",
    "class_store_down": (
        "The class cannot be reached right now. Your page keeps working; it follows the teacher again as soon "
        "as the class is back."
    ),
    "class_store_down_teacher": (
        "The class cannot be reached right now, so the students do not see your changes; the server's log "
        "says why. Your page keeps working, and the class picks up again when it is back."
    ),
    "class_store_unreachable": "The class cannot be reached right now; try again in a moment.",
    "class_reclaimed": "You are teaching class **{code}** again: the page took the class as it was.",
    "class_detached_own": (
        "You changed the page yourself, so you no longer follow the teacher of class {code}. "
        "\"Follow the teacher\" takes the teacher's page back."
    ),
    "class_show_code": "Show the class code",
    "class_panel_count": "{n} students follow",
    "class_forged_teacher": (
        "This teacher link does not lead class {code} (an old or mistyped link), so you follow the class as a "
        "student. Ask the teacher for the link again."
    ),
    "class_lost": (
        "Class {code} is no longer on the server (its class store restarted empty). End it and start a new "
        "class; the students join again with the new link."
    ),
    "class_store_start": (
        "Classes are not available on this server right now; the person who runs it can see why in its log."
    ),
    "class_following": "Following the teacher of class **{code}**.",
    "class_detached": "Exploring on your own (class **{code}**).",
    "class_detach": "Explore on my own",
    "class_rejoin": "Follow the teacher",
    "class_teaching": "You are teaching class **{code}**; {n} students follow.",
    "class_send_photo": "Send my photo to the class",
    "class_send_photo_help": "Your photo (only the photo) goes to the class gallery the teacher sees.",
    "class_photo_sent": "Your photo is in the class gallery.",
    "class_photo_from_teacher": "The photo is the teacher's.",
    "gallery_header": "Class gallery ({n} photos)",
    "gallery_empty": "No photos yet: students send theirs with “Send my photo to the class”.",
    "gallery_layer": "Layer",
    "gallery_channel": "Channel",
    "gallery_intro": "Whose photo excites channel {channel} of {layer} most? Strongest first (mean of the map).",
    "gallery_score": "#{rank} · mean {score:.3g}",
    "gallery_show": "Show to everyone",
    "gallery_hide": "Stop showing",
    "gallery_shown": "The teacher shows the class gallery: channel {channel} of {layer}.",
    "gallery_no_layers": "Choose a layer in the sidebar first.",
}

ZH: dict[str, str] = {
    "class_header": "开始上课",
    "class_intro": (
        "开始上课后，学生的页面会跟随你的页面："
        "视图、课程步骤、模型、所选层、显示设置和你的照片（会话中的其他内容不会共享）。"
        "学生可以回答课程中的问题，也可以把自己的照片发给你。"
    ),
    "class_passphrase": "教师口令",
    "class_passphrase_help": "这台服务器要求输入管理员设置的口令（VIZHOOKS_TEACHER_KEY）。",
    "class_start": "开始上课",
    "class_bad_passphrase": "口令不对，这不是本服务器的教师口令。",
    "class_too_many_tries": "尝试次数太多，请等一分钟再试。",
    "class_code": "课堂代码：**{code}**",
    "class_link": "学生打开这个链接（或扫描二维码）：",
    "class_qr_caption": "课堂 {code}",
    "class_followers": "{n} 名学生正在跟随",
    "class_teacher_link": "教师链接（用于第二台设备，请勿外传）",
    "class_teacher_link_help": "打开这个链接的人可以和你一起主持课堂。不要把它投到大屏幕上。",
    "class_end": "下课",
    "class_ended": "课堂 {code} 已结束。",
    "class_unknown": "没有代码为 {code} 的课堂（可能已经下课），现在显示的是普通页面。",
    "class_store_down": "暂时连不上课堂。你的页面照常可用，课堂恢复后会自动重新跟随老师。",
    "class_store_down_teacher": (
        "暂时连不上课堂，学生看不到你的操作；原因记录在服务器日志里。你的页面照常可用，课堂恢复后会继续。"
    ),
    "class_store_unreachable": "暂时连不上课堂，请稍后再试。",
    "class_reclaimed": "你重新回到了课堂 **{code}**，页面已恢复为课堂当时的样子。",
    "class_detached_own": "你自己改动了页面，所以不再跟随课堂 {code} 的老师。点“跟随老师”即可回到老师的页面。",
    "class_show_code": "显示课堂代码",
    "class_panel_count": "{n} 名学生正在跟随",
    "class_forged_teacher": (
        "这个老师链接不能主持课堂 {code}（链接已过期或抄错了），所以你以学生身份跟随课堂。请向老师重新要一次链接。"
    ),
    "class_lost": (
        "服务器上已经没有课堂 {code} 了（课堂存储重启后被清空）。请结束它并开始新的课堂，学生用新链接重新加入。"
    ),
    "class_store_start": "这台服务器暂时不能上课；运行服务器的人可以在日志里看到原因。",
    "class_following": "正在跟随课堂 **{code}** 的老师。",
    "class_detached": "正在自己探索（课堂 **{code}**）。",
    "class_detach": "自己探索",
    "class_rejoin": "跟随老师",
    "class_teaching": "你正在主持课堂 **{code}**，有 {n} 名学生跟随。",
    "class_send_photo": "把我的照片发给全班",
    "class_send_photo_help": "只发送你的照片，它会出现在老师看到的班级图库里。",
    "class_photo_sent": "你的照片已加入班级图库。",
    "class_photo_from_teacher": "当前照片来自老师。",
    "gallery_header": "班级图库（{n} 张照片）",
    "gallery_empty": "还没有照片：学生可以点击“把我的照片发给全班”。",
    "gallery_layer": "层",
    "gallery_channel": "通道",
    "gallery_intro": "谁的照片最能激活 {layer} 的第 {channel} 个通道？按特征图均值从高到低排列。",
    "gallery_score": "第 {rank} 名 · 均值 {score:.3g}",
    "gallery_show": "展示给全班",
    "gallery_hide": "停止展示",
    "gallery_shown": "老师正在展示班级图库：{layer} 的第 {channel} 个通道。",
    "gallery_no_layers": "请先在侧边栏选择一个层。",
}
