"""Text analysis for tool search: identifiers split, English stemmed, Chinese in n-grams and translated.

`terms(text)` turns tool text into index terms; `query_terms(text)` turns a request into weighted
terms, adding the request's synonyms (weighted down) and, for Chinese, the English words of a small
glossary of tool vocabulary, so that "截图" finds a tool described as "Take a screenshot".

Identifiers split on case changes, digits, `_`, `-`, `.`, `/` and `:` ("browser_take_screenshot",
"API-post-search", "getFileInfo"). English words are lower-cased, stop words dropped, the rest
Porter-stemmed. A run of CJK characters becomes its character unigrams and bigrams (how a
Chinese description matches a Chinese request without a word segmenter).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache

from mcpstation.catalog._stem import stem

SYNONYM_WEIGHT = 0.4  # a synonym counts for less than the word the caller wrote
GLOSSARY_WEIGHT = 1.0  # a glossary translation is the only English signal a Chinese request has
CJK_UNIGRAM_WEIGHT = 0.5  # single characters are weak evidence next to bigrams

# Letters with case splits, digit runs, and CJK runs; everything else separates.
_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+|[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")

STOP_WORDS = frozenset(
    """a an the of to in on for with and or is are be been being was were this that these those it its
    from by as at me my mine i you your yours we our us they their them he she his her please can could would
    should will shall may might must do does did done have has had so if then than just also only not no
    what which who whom whose how when where why there here into onto about up out over all any some each
    every such very own same other more most much many lot lots let get gets got want wants need needs
    like via per e g eg ie etc one thing things whole right sure really actually
    something anything""".split()
)
# "get" is a stop word on both sides: half of all tools start with it, so it tells them apart from nothing.

_ABBREVIATIONS: Mapping[str, str] = {
    "pr": "pull request", "prs": "pull request", "mr": "merge request", "repo": "repository",
    "repos": "repository", "db": "database", "dir": "directory", "dirs": "directory", "js": "javascript",
    "tz": "timezone", "env": "environment", "config": "configuration", "msg": "message", "img": "image",
    "pic": "picture", "http": "url", "https": "url", "www": "url", "k8s": "kubernetes", "kv": "key value",
    "ts": "timestamp", "info": "information", "sql": "sql query", "ci": "continuous integration check",
    "gh": "github", "doc": "document", "docs": "document", "cwd": "directory", "kubectl": "kubernetes",
    "cpu": "cpu resource", "ram": "memory resource", "apk": "apk artifact", "es": "elasticsearch",
}  # fmt: skip

# Abbreviations that product names end with, written as one word ("mongodb", "circleci"): such a name is
# also indexed as its head, the abbreviation and what it stands for, so "mongo" and "database" reach
# MongoDB's tools and "CI" reaches CircleCI's.
_COMPOUND_TAILS: Mapping[str, str] = {
    "db": "database", "ci": "continuous integration", "kb": "knowledge base", "js": "javascript",
}  # fmt: skip
_COMPOUND_HEAD_MIN = 3  # "mysql" is not "my" + "sql"

# Groups of words that name the same thing in tool descriptions and requests. A request's word
# brings the rest of its group in at SYNONYM_WEIGHT; tool text is indexed as written.
_SYNONYM_GROUPS = (
    "create make new add generate build init initialize start open",
    "delete remove erase drop destroy forget purge discard unlink rid cleanup clean wipe clear prune",
    "read open view show display see look inspect print cat dump",
    "list enumerate ls browse",
    "search find lookup locate seek discover query",
    "update edit modify change patch alter replace amend revise",
    "write save store put persist record keep",
    "move rename relocate mv",
    "directory folder dir",
    "file document",
    "filesystem disk local drive",
    "content contents inside body",
    "timestamp time date modified created",
    "undo reset revert unstage rollback",
    "image picture photo png jpg jpeg graphic screenshot",
    "screenshot capture snapshot screengrab",
    "send post publish notify tell announce share",
    "message text chat",
    "reply respond answer",
    "comment note remark annotation",
    "user person people member account profile",
    "repository repo project codebase",
    "issue bug ticket problem defect",
    "commit checkin",
    "diff difference changes compare delta",
    "log history",
    "url link address website webpage site",
    "web internet online",
    "browser tab page",
    "click press tap",
    "type enter fill input",
    "wait pause hold sleep until",
    "time clock hour",
    "timezone zone",
    "convert translate transform",
    "database db sql",
    "table schema column",
    "key entry",
    "cache redis",
    "paper article preprint publication academic scholarly research",
    "citation cite reference bibtex bibliography",
    "abstract summary overview",
    "download fetch retrieve pull grab",
    "coordinate latitude longitude geocode geographic",
    "address street location",
    "direction route navigate itinerary way",
    "drive driving car travel",
    "distance far apart",
    "elevation altitude height high",
    "place restaurant business shop cafe store venue",
    "think reason reasoning reflect analyze",
    "sum add plus total calculate",
    "echo repeat",
    "compress gzip zip",
    "remember memory recall knowledge",
    "entity node",
    "relation relationship connection",
    "observation fact",
    "emoji reaction react thumbs",
    "channel room",
    "workspace team organization org",
    "theme scheme dark light",
    "dialog popup alert confirm modal prompt",
    "network request xhr",
    "console error",
    "run execute evaluate eval",
    "merge combine",
    "stage staged staging",
    "unstage unstaged",
    "status state",
    "metadata information details",
    "size bytes",
    "password credential",
    "form field",
    "keyboard key",
    "tree hierarchy outline",
    "current now today",
    "recent latest last",
    "headline headlines",
    "fork copy clone",
    "approve review",
    # operations: processes, machines, clusters, releases
    "process program",
    "machine host computer node",
    "terminal shell console command",
    "stop terminate kill halt cancel abort",
    "trigger launch kick rerun",
    "drain cordon uncordon schedulable maintenance evict",
    "rollback rollout revert restore",
    "scale replica replicas resize capacity traffic load",
    "deploy deployment deployed release rollout ship",
    "container pod",
    "cluster kubernetes",
    "crash crashing fail failure failed failing broken exception",
    "slow performance latency fast speed optimize plan",
    "flaky unreliable intermittent random nondeterministic",
    "artifact artifacts apk binary",
    "green passing healthy status",
    "validate check verify lint",
    "cost usage billing credit credits spend",
    # data: tables, records, fields, documents
    "column field attribute property",
    "row record entry item",
    "sheet spreadsheet table",
    "aggregate aggregation group total average",
    "batch bulk multiple many several simultaneously",
    "space storage size room",
    "snippet block chunk fragment",
    # people, sales and work
    "contact lead prospect person",
    "company business firm account",
    "deal opportunity sale",
    "engagement call meeting activity",
    "association associate linked link related",
    "ticket task todo",
    "login logged auth authenticated token permission whoami identity",
    # knowledge, research and design
    "knowledge wiki runbook handbook manual documentation",
    "research investigate report study",
    "mockup design designer wireframe prototype frame component layout",
    "icon asset graphic svg",
    "monitor watch track alert",
)

# Chinese words of tool vocabulary and the English they mean, for requests written in Chinese.
# Longest match first: "文件夹" is read before "文件".
_GLOSSARY: Mapping[str, str] = {
    # files and folders
    "文件": "file", "文件夹": "folder directory", "目录": "directory", "路径": "path", "磁盘": "disk file",
    "读取": "read", "读": "read", "写入": "write", "写": "write", "保存": "save write", "存储": "store",
    "新建": "create new", "创建": "create", "建立": "create", "生成": "generate create", "添加": "add",
    "增加": "add", "删除": "delete", "移除": "remove", "清除": "clear delete", "清空": "clear",
    "重命名": "rename move", "改名": "rename move", "移动": "move", "复制": "copy", "拷贝": "copy",
    "编辑": "edit", "修改": "edit modify change", "更新": "update", "替换": "replace", "搜索": "search",
    "查找": "find search", "查询": "query search", "检索": "search retrieve", "寻找": "find", "找": "find",
    "列出": "list", "列表": "list", "查看": "view show", "显示": "show display", "展示": "show display",
    "打开": "open", "关闭": "close", "内容": "content", "大小": "size", "信息": "information info",
    "属性": "properties", "权限": "permission", "树": "tree", "结构": "structure tree", "多个": "multiple",
    "所有": "all", "全部": "all", "图片": "image", "图像": "image", "照片": "image photo", "压缩": "compress",
    "解压": "extract", "上传": "upload", "下载": "download", "导出": "export", "导入": "import",
    # version control and code hosting
    "仓库": "repository", "代码库": "repository", "项目": "project", "代码": "code", "提交": "commit",
    "提交说明": "commit message", "分支": "branch", "切换": "switch checkout", "合并": "merge",
    "合并请求": "merge request", "拉取请求": "pull request", "拉取": "pull", "推送": "push",
    "暂存": "stage staged", "暂存区": "staged", "工作区": "working tree", "差异": "diff", "区别": "diff",
    "变更": "changes", "改动": "changes", "修改记录": "log", "历史": "history log", "日志": "log",
    "状态": "status", "版本": "version revision", "标签": "label tag", "问题": "issue", "缺陷": "bug issue",
    "评论": "comment", "评审": "review", "审查": "review", "审核": "review", "批准": "approve",
    "派生": "fork", "复刻": "fork", "克隆": "clone", "撤销": "reset undo", "重置": "reset", "检查": "check status",
    # web and browser
    "网页": "web page", "网站": "website", "网址": "url", "链接": "link url", "网上": "web", "网络": "web network",
    "互联网": "internet web", "浏览器": "browser", "页面": "page", "标签页": "tab", "截图": "screenshot",
    "截个图": "screenshot", "截屏": "screenshot", "点击": "click", "按钮": "button", "输入": "type input",
    "填写": "fill", "表单": "form", "悬停": "hover", "拖动": "drag", "拖拽": "drag", "等待": "wait",
    "出现": "appear", "消失": "disappear", "文字": "text", "文本": "text", "弹窗": "dialog", "对话框": "dialog",
    "抓取": "fetch", "获取": "get fetch", "访问": "visit navigate", "跳转": "navigate", "返回": "back",
    "后退": "back", "脚本": "script javascript", "执行": "execute run", "运行": "run", "控制台": "console",
    "请求": "request", "新闻": "news", "搜": "search", "转换": "convert", "转成": "convert", "换算": "convert",
    # time
    "时间": "time", "现在": "current now", "当前": "current", "几点": "time", "时区": "timezone",
    "日期": "date", "北京时间": "time", "下午": "pm", "上午": "am",
    # data
    "数据库": "database", "表": "table", "表格": "table", "列": "column", "行": "row", "记录": "record",
    "插入": "insert", "统计": "count", "数量": "count", "结构描述": "schema", "键": "key", "值": "value",
    "缓存": "cache", "过期": "expire", "设置": "set", "设为": "set",
    # messaging
    "消息": "message", "频道": "channel", "发送": "send post", "发": "send post", "回复": "reply",
    "线程": "thread", "聊天记录": "history messages", "聊天": "chat message", "用户": "user", "成员": "member user",
    "资料": "profile", "表情": "emoji reaction", "通知": "notify",
    # knowledge and documents
    "知识图谱": "knowledge graph", "图谱": "graph", "实体": "entity", "关系": "relation", "节点": "node",
    "观察": "observation", "记住": "remember create", "记忆": "memory", "笔记": "note", "页": "page",
    "块": "block", "数据源": "data source", "论文": "paper", "文章": "article", "引用": "citation",
    "摘要": "abstract", "全文": "full text", "章节": "section", "主题": "topic", "订阅": "watch subscribe",
    # maps
    "地图": "map", "路线": "directions route", "导航": "directions navigate", "驾车": "driving",
    "开车": "driving", "步行": "walking", "距离": "distance", "地址": "address", "坐标": "coordinates",
    "经纬度": "latitude longitude", "经度": "longitude", "纬度": "latitude", "海拔": "elevation",
    "地点": "place", "附近": "nearby", "餐厅": "restaurant", "位置": "location",
    # reasoning and misc
    "思考": "think thinking", "一步一步": "step by step", "推理": "reasoning", "分析": "analyze",
    "计算": "calculate", "求和": "sum", "相加": "add sum", "回显": "echo", "重复": "repeat",
    "环境变量": "environment variables", "配置": "configuration", "帮助": "help",
    # operations
    "部署": "deployment deploy", "扩容": "scale replicas", "缩容": "scale replicas", "副本": "replicas",
    "集群": "cluster", "命名空间": "namespace", "容器": "container pod", "进程": "process", "终端": "terminal",
    "命令": "command", "安装": "install", "卸载": "uninstall", "升级": "upgrade", "发布": "release",
    "回滚": "rollback", "重启": "restart", "构建": "build", "失败": "failure failed", "流水线": "pipeline",
    "工作流": "workflow", "测试": "test", "不稳定": "flaky", "重新运行": "rerun", "重跑": "rerun",
    "端口": "port", "转发": "forward", "资源": "resource", "监控": "monitor", "用量": "usage", "产物": "artifact",
    "密钥": "key secret credential", "轮换": "rotate", "服务器": "server", "服务": "service",
    # data
    "集合": "collection", "文档": "document documentation", "索引": "index", "映射": "mapping", "字段": "field",
    "数据表": "table", "聚合": "aggregate", "分组": "group", "连接": "connect connection", "断开": "disconnect",
    "订单": "order", "金额": "amount", "库存": "inventory", "附件": "attachment", "批量": "batch multiple",
    "分片": "shard", "模式": "schema",
    # sales, work and knowledge
    "交易": "deal", "联系人": "contact", "客户": "contact", "公司": "company", "工单": "ticket issue",
    "任务": "task", "优先级": "priority", "指派": "assign", "分配": "assign", "知识库": "knowledge base",
    "云端硬盘": "drive", "网盘": "drive", "谷歌": "google", "库": "library", "最新": "latest", "研究": "research",
    "报告": "report", "爬取": "crawl", "设计稿": "design file", "设计": "design", "图标": "icon", "积分": "credit",
}  # fmt: skip
_GLOSSARY_MAX = max(len(word) for word in _GLOSSARY)


@lru_cache(maxsize=65536)
def _english(word: str) -> str | None:
    lowered = word.lower()
    if len(lowered) < 2 or lowered.isdigit() or lowered in STOP_WORDS:
        return None
    return stem(lowered)


def _cjk_grams(run: str) -> list[str]:
    grams = list(run)
    grams += [run[i : i + 2] for i in range(len(run) - 1)]
    return grams


def terms(text: str) -> list[str]:
    """Index terms of tool text, in order, repeated as often as they occur."""
    return list(_terms(text))


@lru_cache(maxsize=16384)
def _terms(text: str) -> tuple[str, ...]:
    # Cached whole: parameter descriptions ("Repository owner", "Page number") repeat across tools.
    out: list[str] = []
    for match in _WORD.finditer(text):
        word = match.group()
        if _CJK.match(word):
            out += _cjk_grams(word)
        else:
            term = _english(word)
            if term is not None:
                out.append(term)
    return tuple(out)


def _build_synonyms() -> dict[str, frozenset[str]]:
    table: dict[str, set[str]] = {}
    for group in _SYNONYM_GROUPS:
        stems = {stem(word) for word in group.split()}
        for member in stems:
            table.setdefault(member, set()).update(stems - {member})
    return {word: frozenset(others) for word, others in table.items()}


_SYNONYMS = _build_synonyms()
_GLOSSARY_TERMS: Mapping[str, tuple[str, ...]] = {
    chinese: tuple(t for word in english.split() if (t := _english(word)) is not None)
    for chinese, english in _GLOSSARY.items()
}


def _glossary_matches(run: str) -> list[str]:
    """English terms of the glossary words in a CJK run, longest match first, left to right."""
    found: list[str] = []
    i = 0
    while i < len(run):
        for size in range(min(_GLOSSARY_MAX, len(run) - i), 0, -1):
            english = _GLOSSARY_TERMS.get(run[i : i + size])
            if english is not None:
                found += english
                i += size
                break
        else:
            i += 1
    return found


def _add(weights: dict[str, float], term: str, weight: float) -> None:
    if weights.get(term, 0.0) < weight:
        weights[term] = weight


@lru_cache(maxsize=4096)
def _query_terms(text: str) -> tuple[tuple[str, float], ...]:
    weights: dict[str, float] = {}
    written: list[str] = []
    for match in _WORD.finditer(text):
        word = match.group()
        if _CJK.match(word):
            for gram in _cjk_grams(word):
                _add(weights, gram, CJK_UNIGRAM_WEIGHT if len(gram) == 1 else 1.0)
            for translated in _glossary_matches(word):
                _add(weights, translated, GLOSSARY_WEIGHT)
                written.append(translated)
            continue
        expansion = _ABBREVIATIONS.get(word.lower())
        for part in expansion.split() if expansion else [word]:
            english = _english(part)
            if english is not None:
                _add(weights, english, 1.0)
                written.append(english)
    for term in written:
        for synonym in _SYNONYMS.get(term, ()):
            _add(weights, synonym, SYNONYM_WEIGHT)
    return tuple(weights.items())


def query_terms(text: str) -> dict[str, float]:
    """Weighted terms of a request: its own words at 1.0, their synonyms and translations below."""
    return dict(_query_terms(text))


def compound_words(name: str) -> list[str]:
    """Extra index terms of a name's one-word compounds: "mongodb" gives mongo, db and database."""
    out: list[str] = []
    for match in _WORD.finditer(name):
        word = match.group().lower()
        for tail, meaning in _COMPOUND_TAILS.items():
            if (
                word.isascii()
                and word.isalpha()
                and word.endswith(tail)
                and len(word) - len(tail) >= _COMPOUND_HEAD_MIN
            ):
                out += terms(f"{word[: -len(tail)]} {tail} {meaning}")
    return out


def identifier_words(names: Iterable[str]) -> list[str]:
    """Index terms of identifiers (tool, server and parameter names), split on case, digits and separators."""
    out: list[str] = []
    for name in names:
        out += terms(name)
    return out
