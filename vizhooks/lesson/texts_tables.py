"""Column headers of the page's tables (the library's DataFrames keep their English column names for
library users), English and 简体中文; merged into texts.EN and texts_zh.ZH."""

from __future__ import annotations

EN: dict[str, str] = {
    "layer_col_name": "Module",
    "layer_col_type": "Type",
    "layer_col_input_shape": "Input shape",
    "layer_col_output_shape": "Output shape",
    "layer_col_params": "Parameters",
    "layer_col_trainable": "Trainable",
    "layer_col_time_ms": "Time (ms)",
    "layer_col_calls": "Calls",
    "layer_col_output_elements": "Output values",
    "layer_col_depth": "Depth",
    "backward_note_inplace_self": "not hooked: it changes its input in place (inplace=True), which a full backward "
                                  "hook does not allow",
    "backward_note_inplace_later": "not hooked: a later operation changes its output in place, which a full "
                                   "backward hook does not allow",
}

ZH: dict[str, str] = {
    "layer_col_name": "模块",
    "layer_col_type": "类型",
    "layer_col_input_shape": "输入形状",
    "layer_col_output_shape": "输出形状",
    "layer_col_params": "参数量",
    "layer_col_trainable": "可训练",
    "layer_col_time_ms": "耗时（毫秒）",
    "layer_col_calls": "调用次数",
    "layer_col_output_elements": "输出元素数",
    "layer_col_depth": "层级深度",
    "backward_note_inplace_self": "未挂钩子：它会原地修改自己的输入（inplace=True），完整反向钩子不允许这样做",
    "backward_note_inplace_later": "未挂钩子：后面的某个操作会原地修改它的输出，完整反向钩子不允许这样做",
}
