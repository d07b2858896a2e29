"""Odd strings every text-taking function is run over (after flair's shared list)."""

NASTY = [
    "",
    " ",
    "\t\n  \r\n",
    "🙂 emoji 👩‍👩‍👧",  # emoji and a zero-width-joiner sequence
    "zero\u200bwidth\u200djoiner",
    "cafe\u0301 naïve Ångström",  # combining acute accent, precomposed letters
    "שלום עולם مرحبا",  # right-to-left scripts
    "control\x00chars\x07here\x1b",
    "日本語のテキスト",
    "a" * 300,  # one very long word
    "UPPER lower MiXeD",
]
