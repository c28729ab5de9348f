"""Column headers of the page's tables (the library's DataFrames keep their English column names for
library users), English and 简体中文; merged into texts.EN and texts_zh.ZH."""

from __future__ import annotations

EN: dict[str, str] = {
    "col_name": "Module",
    "col_type": "Type",
    "col_input_shape": "Input shape",
    "col_output_shape": "Output shape",
    "col_params": "Parameters",
    "col_trainable": "Trainable",
    "col_time_ms": "Time (ms)",
    "col_calls": "Calls",
    "col_output_elements": "Output values",
    "col_depth": "Depth",
}

ZH: dict[str, str] = {
    "col_name": "模块",
    "col_type": "类型",
    "col_input_shape": "输入形状",
    "col_output_shape": "输出形状",
    "col_params": "参数量",
    "col_trainable": "可训练",
    "col_time_ms": "耗时（毫秒）",
    "col_calls": "调用次数",
    "col_output_elements": "输出元素数",
    "col_depth": "层级深度",
}
