"""The few interface strings the book's extensions add, per Sphinx language."""

MESSAGES = {
    "en": {
        "provenance": "Outputs on this page were produced by torch {torch} on {device}, {date}.",
        "download_notebook": "Download this page as an executed notebook (.ipynb).",
        "switch_label": "Language",
        "search_placeholder": "Search…",
        "code_prompt_show": "Show code cell {type}",
        "code_prompt_hide": "Hide code cell {type}",
        "root_title": "Cutting the Graph · 切断计算图",
        "provenance_build": "This build ran on {device} and was made on {date}.",
        "provenance_col_package": "package",
        "provenance_col_version": "version",
        "provenance_col_page": "page",
        "provenance_col_date": "outputs produced",
        "provenance_col_seconds": "execution (s)",
        "provenance_col_status": "in this build",
        "provenance_executed": "executed",
        "provenance_cached": "from the cache",
        "provenance_unchanged": "unchanged",
        "devices_no_record": "No CUDA run has been recorded yet (results/cuda.json): "
                             "this page compares the devices once the GPU job has run.",
        "devices_no_cpu": "The CPU record (results/cpu.json) is missing: run `nox -s record`.",
        "devices_runs": "CUDA run: {gpu}, torch {torch}, CUDA {cuda}, {date}. "
                        "CPU run: torch {cpu_torch}, {cpu_date}.",
        "devices_summary": "{compared} code cells compared; {failing} behave differently on the two devices.",
        "devices_stale": "{stale} cells changed since the CUDA run, so for them this comparison is "
                         "stale until the GPU job runs again.",
        "devices_col_cell": "page and cell",
        "devices_col_kind": "kind",
        "devices_col_detail": "what differs",
        "devices_kind_behaviour": "behaviour",
        "devices_kind_value": "value",
        "devices_kind_stale": "stale",
        "devices_kind_missing": "not run on CUDA",
    },
    "zh_CN": {
        "provenance": "本页输出于 {date} 由 torch {torch} 在 {device} 上运行生成。",
        "download_notebook": "下载本页的笔记本文件（含运行结果）。",
        "switch_label": "语言",
        "search_placeholder": "搜索…",
        # myst-nb fills {type} with an English word, so the Chinese prompt omits it.
        "code_prompt_show": "展开代码单元",
        "code_prompt_hide": "收起代码单元",
        "root_title": "Cutting the Graph · 切断计算图",
        "provenance_build": "本次构建运行在 {device} 上，构建日期为 {date}。",
        "provenance_col_package": "软件包",
        "provenance_col_version": "版本",
        "provenance_col_page": "页面",
        "provenance_col_date": "输出生成日期",
        "provenance_col_seconds": "执行耗时（秒）",
        "provenance_col_status": "本次构建",
        "provenance_executed": "重新执行",
        "provenance_cached": "取自缓存",
        "provenance_unchanged": "未改动",
        "devices_no_record": "目前还没有记录过 CUDA 运行结果（results/cuda.json）：GPU 任务运行之后，本页才会比较两种设备。",
        "devices_no_cpu": "缺少 CPU 运行记录（results/cpu.json）：请运行 `nox -s record`。",
        "devices_runs": "CUDA 运行：{gpu}，torch {torch}，CUDA {cuda}，{date}。CPU 运行：torch {cpu_torch}，{cpu_date}。",
        "devices_summary": "共比较了 {compared} 个代码单元，其中 {failing} 个在两种设备上的行为不同。",
        "devices_stale": "有 {stale} 个代码单元在 CUDA 运行之后改动过，在 GPU 任务重新运行之前，它们的比较结果已经过时。",
        "devices_col_cell": "页面与单元",
        "devices_col_kind": "类别",
        "devices_col_detail": "差异",
        "devices_kind_behaviour": "行为不同",
        "devices_kind_value": "数值不同",
        "devices_kind_stale": "已过时",
        "devices_kind_missing": "未在 CUDA 上运行",
    },
}


def message(language: str, key: str) -> str:
    return MESSAGES[language][key]
