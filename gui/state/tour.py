"""The guided tour, Qt-free: one preset per phenomenon Branchpoint shows — a prompt, lanes, settings, the view
to open, what to do after the run, and two sentences of explanation in English and in Chinese. The window
(gui.dialogs.tour_dialog, MainWindow.start_tour) runs a stop."""

from __future__ import annotations

from dataclasses import dataclass, field

from decoding.spec import LaneSpec

# What a stop does once its run has finished (gui.main_window.MainWindow._after_tour_run):
AFTER_ACTIONS = {
    None: "nothing",
    "replay_first_critical": "replay the branch not taken at the first critical point of lane 1",
    "temperature_fanouts": "add fan-outs of lane 0 at several temperatures and run again",
    "run_again": "run again with the same seeds and compare",
    "select_first_critical": "select the first critical point",
    "explain_contrast": "explain lane 0 and show where extra['contrast'] looks back at extra['concessive']",
    "explain_journey": "explain lane 0 and show the logit lens where its choice settles latest",
}


@dataclass(frozen=True)
class TourLane:
    spec: LaneSpec
    fanout: int = 1


@dataclass(frozen=True)
class TourStop:
    key: str
    title_en: str
    title_zh: str
    prompt: str
    lanes: tuple[TourLane, ...]
    view: str  # the window's chart to show: timeline, lane_map, compare, fanout, sweep, beam_tree, attention, lens…
    text_en: str
    text_zh: str
    chat: bool = False
    max_new_tokens: int = 32
    seed: int | None = 1
    after: str | None = None
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.after not in AFTER_ACTIONS:
            raise ValueError(f"invalid after={self.after!r}: allowed {', '.join(map(str, AFTER_ACTIONS))}")


def _sample(name: str, seed: int, **parameters) -> LaneSpec:
    return LaneSpec(name, do_sample=True, seed=seed, **parameters)


STOPS: list[TourStop] = [
    TourStop(
        key="near_tie",
        title_en="A near-tie decides the branch",
        title_zh="一次近乎平局决定了分支",
        prompt="Although I was tired, I still decided to",
        lanes=(TourLane(LaneSpec("greedy")), TourLane(_sample("T 1.0", 11, temperature=1.0))),
        view="compare",
        after="replay_first_critical",
        text_en="Where ▲ marks a step, two strong candidates were close: a slightly different draw would have "
                "taken the runner-up. The lane added after it replays that branch not taken with the same draws "
                "everywhere else — see how far the two texts drift apart.",
        text_zh="▲ 标出的步骤里，两个有力的候选词非常接近：随机数稍有不同，就会选中第二名。紧随其后新增的车道重放了这条"
                "没走的分支，其余抽样完全相同——看看两段文字会分开多远。",
    ),
    TourStop(
        key="near_tie_zh",
        title_en="The same, in Chinese: 虽然 … 但",
        title_zh="同样的现象，中文：虽然……但",
        prompt="我虽然很累，但还是决定",
        lanes=(TourLane(LaneSpec("greedy")), TourLane(_sample("T 1.0", 11, temperature=1.0))),
        view="lane_map",
        after="select_first_critical",
        text_en="A Chinese prompt is split into byte-level tokens, so one character can take two or three steps; "
                "the critical points still mark where a small fluctuation picked the continuation. The lane map "
                "shows every step of both lanes at once.",
        text_zh="中文提示词被切成字节级的词元，一个汉字可能要走两三步；临界点仍然标出了微小波动决定续写方向的地方。"
                "车道 × 步骤图一次显示两条车道的每一步。",
    ),
    TourStop(
        key="thermal_fanout",
        title_en="Thermal noise made visible: fan-outs widen with temperature",
        title_zh="让热噪声看得见：温度越高，分叉越宽",
        prompt="Once upon a time, in a small village by the sea,",
        lanes=(TourLane(_sample("T 0.7", 3, temperature=0.7), fanout=16),),
        view="sweep",
        after="temperature_fanouts",
        max_new_tokens=24,
        text_en="Each member of a fan-out draws with its own seed: at low temperature they share a long prefix, at "
                "high temperature they part almost at once. The chart shows diversity growing with temperature "
                "(the Fan-out tab shows each tree).",
        text_zh="同一组分叉里的每个成员用各自的种子抽样：温度低时它们共享很长的前缀，温度高时几乎立刻分开。图表显示多样性"
                "随温度增长（“分叉”标签页显示每一棵树）。",
    ),
    TourStop(
        key="determinism",
        title_en="Determinism: temperature 0 and a fixed seed",
        title_zh="确定性：温度为 0，种子固定",
        prompt="The capital of France is",
        lanes=(TourLane(LaneSpec("greedy")), TourLane(_sample("T 1.0", 7, temperature=1.0))),
        view="timeline",
        after="run_again",
        max_new_tokens=24,
        text_en="At temperature 0 the prompt alone fixes every token, and a sampled lane with a fixed seed is just as "
                "repeatable: running again gives the same text, token for token. If a token ever differs, the tool "
                "shows the step — a near-tie that another machine's arithmetic tipped.",
        text_zh="温度为 0 时，提示词本身就决定了每一个词；种子固定的抽样车道同样可以重复：再运行一次，文字逐词相同。"
                "如果哪个词不同，工具会指出那一步——那是一个被另一台机器的运算误差扳倒的近乎平局。",
    ),
    TourStop(
        key="beam_vs_greedy",
        title_en="Beam vs greedy: joint optimum, local optimum",
        title_zh="束搜索与贪心：整体最优与局部最优",
        prompt="The meaning of life is",
        lanes=(TourLane(LaneSpec("greedy")), TourLane(LaneSpec("beam-4", num_beams=4, num_return_sequences=4)),
               TourLane(LaneSpec("beam-8", num_beams=8, num_return_sequences=8))),
        view="beam_tree",
        max_new_tokens=32,
        text_en="Greedy takes the best token at each step; beam search keeps several partial texts and returns the "
                "best whole sequence, a joint optimum rather than a local one. Its pull toward likely text often "
                "makes it shorter and more generic — compare the lanes' endings.",
        text_zh="贪心解码每一步都取最好的词；束搜索保留多段候选文本，返回整体得分最高的序列——是整体最优，而不是局部最优。"
                "它偏爱高概率的文本，结果往往更短、更平淡——比较几条车道的结尾。",
    ),
    TourStop(
        key="repetition",
        title_en="Repetition, and the penalty that breaks it",
        title_zh="重复，以及打破重复的惩罚",
        prompt="I like apples. I like apples. I like",
        lanes=(TourLane(LaneSpec("greedy")),
               TourLane(LaneSpec("greedy · rep 1.3", repetition_penalty=1.3)),
               TourLane(LaneSpec("greedy · no-repeat 3", no_repeat_ngram_size=3))),
        view="lane_map",
        max_new_tokens=32,
        text_en="Greedy decoding falls into loops easily: once a phrase has repeated, repeating it again is the most "
                "likely choice. A repetition penalty lowers the tokens already used, and no_repeat_ngram_size bans "
                "repeated n-grams — both break the loop.",
        text_zh="贪心解码很容易陷入循环：一个短语重复过一次，再重复一次就成了最可能的选择。重复惩罚压低已经用过的词，"
                "no_repeat_ngram_size 禁止重复的 n 元组——两者都能打破循环。",
    ),
]

# Inside the model (issue 13): the chat form, as the product is used; SmolLM2's heads show the delayed release
# there (" but" → "Although": layer 4 head 8 gives it 0.39, about 0.013 to each other earlier token).
STOPS += [
    TourStop(
        key="delayed_release",
        title_en="Delayed release: “but” looks back at “Although”",
        title_zh="延迟释放：“but”回看“Although”",
        prompt="Although I was tired, I still went out, but",
        chat=True,
        lanes=(TourLane(LaneSpec("greedy")),),
        view="attention",
        after="explain_contrast",
        max_new_tokens=16,
        extra={"contrast": " but", "concessive": "Although"},
        text_en="Reading “but”, one attention head looks straight back at “Although”, across every word in between: "
                "the concession opened at the start is released at the contrast. The heatmap shows that head in "
                "every layer (position 0, which soaks up most attention, left out) — pick another head or token.",
        text_zh="读到“but”时，有一个注意力头越过中间所有的词，直接回看“Although”：开头埋下的让步在转折处得到释放。"
                "热图显示这个头在每一层的权重（吸走大部分注意力的第 0 个位置已略去）——也可以换一个头或词元看看。",
    ),
    TourStop(
        key="delayed_release_zh",
        title_en="The same in Chinese: 但 looks back at 虽然",
        title_zh="中文里也一样：“但”回看“虽然”",
        prompt="我虽然很累，但还是决定",
        chat=True,
        lanes=(TourLane(LaneSpec("greedy")),),
        view="attention",
        after="explain_contrast",
        max_new_tokens=16,
        extra={"contrast": "但", "concessive": "虽然"},
        text_en="Reading 但 (“but”), a head looks back at 虽然 (“although”), even though every character here is two "
                "or three byte-level tokens. The Tokens tab shows how the characters are split.",
        text_zh="读到“但”时，有一个注意力头回看“虽然”，尽管这里每个汉字都被切成两三个字节级词元。"
                "“Tokens”标签页显示汉字是怎样被切开的。",
    ),
    TourStop(
        key="token_journey",
        title_en="The token's journey through the layers",
        title_zh="一个词元穿过各层的旅程",
        prompt="The capital of France is",
        lanes=(TourLane(LaneSpec("greedy")),),
        view="lens",
        after="explain_journey",
        max_new_tokens=12,
        text_en="Each row is what the model would say if it stopped after that layer: the early layers mostly echo "
                "the current word, and the final choice reaches the top only late. The red frames follow it up "
                "the layers; the line above the table says where it settles.",
        text_zh="每一行是模型在这一层之后就停下时会说出的词：前面的层大多只是重复当前的词，最终的选择很晚才升到第一。"
                "红框沿着各层跟踪它，表格上方的说明指出它在哪一层定下来。",
    ),
]


def stop(key: str) -> TourStop:
    for found in STOPS:
        if found.key == key:
            return found
    raise KeyError(f"no tour stop {key!r}: allowed {', '.join(s.key for s in STOPS)}")
