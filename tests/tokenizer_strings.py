"""Strings a tokenizer check runs over (≥ 300): English, Chinese, code, digits, emoji, runs of spaces, newlines and
tabs, HTML tags, and mixtures of them, made deterministically from a few lists."""

from __future__ import annotations

ENGLISH = [
    "Although I was tired, I still decided to",
    "The capital of France is",
    "Once upon a time, in a small village by the sea,",
    "She said that the weather would be fine, but it rained all day long.",
    "Don't stop believing; it's what we'd do, isn't it?",
    "A lighthouse keeper saw a man in a white shirt and blue pants.",
    "naïve café résumé façade Über straße",
    "HELLO world MiXeD CaSe",
    "e.g. i.e. etc. Mr. Smith vs. Dr. Jones",
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
]
CHINESE = [
    "我虽然很累，但还是决定",
    "今天天气不错，适合去",
    "春天来了，花园里的",
    "人工智能正在改变世界。",
    "他说：“明天见！”",
    "北京是中国的首都，上海是最大的城市。",
    "我们去公园吧？好啊！",
    "一二三四五六七八九十",
    "中英混合 mixed 文本 text",
    "《红楼梦》是一部小说。",
]
CODE = [
    "def add(a, b):\n    return a + b\n",
    "for (int i = 0; i < n; ++i) {\n\tsum += a[i];\n}",
    "if x == 1:\n\tprint('one')\nelse:\n\tpass",
    "const f = (x) => x ** 2; // square",
    "SELECT * FROM users WHERE id = 42;",
    '{"key": [1, 2, 3], "nested": {"a": null}}',
    "#include <stdio.h>\nint main(void) { return 0; }",
    "x = [i*i for i in range(10) if i % 2]",
    "git commit -m 'fix: handle None'",
    "   indented    code\t\twith tabs",
]
DIGITS = ["0", "7", "42", "123", "2026", "3.14159", "1,000,000", "+86 138 0013 8000", "1e-6", "0x1F 0b1010 0o17"]
EMOJI = ["🙂", "🚀🚀", "👍🏽", "👨‍👩‍👧‍👦", "I ❤️ tea", "🇨🇳🇬🇧", "☕️ time", "🤖 says hi", "✨✨✨", "😀😃😄😁"]
WHITESPACE = [
    " ", "  ", "   ", "    ", " " * 8, " " * 31, " " * 40, "\n", "\n\n", "\n\n\n", "\n" * 31, "\n" * 35, "\t", "\t\t",
    "\t" * 33, " \n", "\n ", " \t \n", "a  b", "a\n\nb", "a\t\tb", "trailing   ", "   leading", "\r\n", "a \n b",
]  # fmt: skip
HTML = [
    "<b>bold</b>", "<table><tr><td>1</td></tr></table>", "<h1>Title</h1>", "<code>x = 1</code>",
    "<div><span>a</span></div>", "<a>link</a>", "<strong>s</strong> <em>e</em>", "<ul><li>one</li></ul>",
    "<bbox>", "<start_of_image>", "<img>", "<blockquote>q</blockquote>", "<p>not a piece</p>", "<b >", "< b>",
]  # fmt: skip


def tokenizer_strings() -> list[str]:
    base = ENGLISH + CHINESE + CODE + DIGITS + EMOJI + WHITESPACE + HTML
    strings = list(base)
    for i, text in enumerate(ENGLISH + CHINESE):
        strings.append(f"{text} {DIGITS[i % len(DIGITS)]} {EMOJI[i % len(EMOJI)]}")
        strings.append(f"{HTML[i % len(HTML)]}{text}{WHITESPACE[i % len(WHITESPACE)]}")
        strings.append(f"{CODE[i % len(CODE)]}\n\n{text}")
    for i, space in enumerate(WHITESPACE):
        strings.append(f"{ENGLISH[i % len(ENGLISH)]}{space}{CHINESE[i % len(CHINESE)]}")
        strings.append(f"{space}{HTML[i % len(HTML)]}{space}")
        strings.append(f"{DIGITS[i % len(DIGITS)]}{space}{DIGITS[(i + 3) % len(DIGITS)]}")
    for text in CODE + EMOJI:
        strings.append(text.upper())
        strings.append(" " + text)
        strings.append(text + "\n")
    for i in range(len(HTML)):
        strings.append(HTML[i] + HTML[(i + 1) % len(HTML)] + CHINESE[i % len(CHINESE)])
        english, chinese, emoji = ENGLISH[i % len(ENGLISH)], CHINESE[i % len(CHINESE)], EMOJI[i % len(EMOJI)]
        strings.append(f"{english}\n\n\n{HTML[i]}  {emoji}\t{chinese}")
    return list(dict.fromkeys(strings))
