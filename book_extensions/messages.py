"""The few interface strings the book's extensions add, per Sphinx language."""

MESSAGES = {
    "en": {
        "provenance": "Outputs on this page were produced by torch {torch} on {device}, {date}.",
        "switch_label": "Language",
        "search_placeholder": "Search…",
        "code_prompt_show": "Show code cell {type}",
        "code_prompt_hide": "Hide code cell {type}",
        "root_title": "Cutting the Graph · 切断计算图",
    },
    "zh_CN": {
        "provenance": "本页输出于 {date} 由 torch {torch} 在 {device} 上运行生成。",
        "switch_label": "语言",
        "search_placeholder": "搜索…",
        # myst-nb fills {type} with an English word, so the Chinese prompt omits it.
        "code_prompt_show": "展开代码单元",
        "code_prompt_hide": "收起代码单元",
        "root_title": "Cutting the Graph · 切断计算图",
    },
}


def message(language: str, key: str) -> str:
    return MESSAGES[language][key]
