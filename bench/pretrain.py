"""Pre-training throughput: bertlens' trainer against transformers' Trainer, same config and data, one run.

Data: WikiText-2 raw validation + test (../shared/data), one paragraph per line, headings dropped; a WordPiece
tokenizer (`--tokenizer`, or one trained here on the same text). Model: the `tiny` and `mini` presets (BERT
miniatures), seq length 128, 32 sequences per step, AdamW (lr 5e-4, betas 0.9/0.98, eps 1e-6, weight decay 0.01),
linear warm-up and decay, dropout 0.1, same seed, same number of steps, same threads.

* peer (padding): `Trainer` + `BertForMaskedLM` + `DataCollatorForLanguageModeling` (15%, 80/10/10), every line an
  example cut at 128 tokens and batches padded to their longest, as `run_mlm.py --line_by_line` sets it up;
* peer (grouped): the same with `run_mlm.py`'s default `group_texts`, lines concatenated and cut into blocks of 128;
* bertlens: `pretrain` (packed sequences, vocabulary projection on the masked rows only), watcher off.

Throughput is tokens/s of real text: the non-padding tokens fed to the model ([CLS]/[SEP] included) over the wall
time of the training loop. Loss curves are compared at equal numbers of tokens seen.

    python bench/pretrain.py --steps 40 --threads 2 --plot docs/pretrain-loss.svg
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import shutil
import tempfile
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "corpus" / "wikitext-2-raw"
PRESETS = ("tiny", "mini")


def paragraphs() -> list[str]:
    lines = []
    for name in ("wiki.valid.raw", "wiki.test.raw"):
        for line in (DATA / name).read_text(encoding="utf-8").splitlines():
            line = line.strip()
            if line and not re.match(r"^=+ .* =+$", line):
                lines.append(line)
    return lines


def peer(preset: str, args: argparse.Namespace, lines: list[str], tokenizer_dir: Path, grouped: bool) -> dict:
    import torch
    from transformers import (
        BertConfig,
        BertForMaskedLM,
        BertTokenizerFast,
        DataCollatorForLanguageModeling,
        Trainer,
        TrainingArguments,
    )
    from transformers.utils import logging as hf_logging

    from bertlens.training import PRESETS as SHAPES

    hf_logging.set_verbosity_error()
    tokenizer = BertTokenizerFast.from_pretrained(str(tokenizer_dir))
    if grouped:  # run_mlm.py's group_texts: concatenate, cut into blocks of seq_length
        ids = tokenizer(lines, return_special_tokens_mask=True)
        flat = {k: list(itertools.chain.from_iterable(v)) for k, v in ids.items()}
        total = len(flat["input_ids"]) // args.seq_length * args.seq_length
        examples = [{k: v[i : i + args.seq_length] for k, v in flat.items()} for i in range(0, total, args.seq_length)]
    else:  # run_mlm.py --line_by_line: one example per line, truncated, padded per batch by the collator
        encoded = tokenizer(lines, truncation=True, max_length=args.seq_length, return_special_tokens_mask=True)
        examples = [{k: encoded[k][i] for k in encoded} for i in range(len(lines))]
    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=0.15)
    seen = {"tokens": 0}

    def collate(batch: list[dict]) -> dict:
        out = collator(batch)
        seen["tokens"] += int(out["attention_mask"].sum())
        return out

    config = BertConfig(vocab_size=len(tokenizer), max_position_embeddings=512, **SHAPES[preset])
    torch.manual_seed(args.seed)
    model = BertForMaskedLM(config)
    out = Path(tempfile.mkdtemp(prefix="bench-trainer-"))
    training = TrainingArguments(
        output_dir=str(out),
        per_device_train_batch_size=args.batch_size,
        max_steps=args.steps,
        learning_rate=5e-4,
        warmup_steps=args.warmup,
        weight_decay=0.01,
        adam_beta1=0.9,
        adam_beta2=0.98,
        adam_epsilon=1e-6,
        max_grad_norm=1.0,
        lr_scheduler_type="linear",
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        use_cpu=True,
        bf16=args.bf16,
        seed=args.seed,
        dataloader_num_workers=0,
        disable_tqdm=True,
    )
    trainer = Trainer(model=model, args=training, train_dataset=examples, data_collator=collate)
    start = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - start
    shutil.rmtree(out, ignore_errors=True)
    losses = [r["loss"] for r in trainer.state.log_history if "loss" in r]
    label = "Trainer, grouped (packed)" if grouped else "Trainer, line by line (padded per batch)"
    return {"tool": label, "tokens": seen["tokens"], "seconds": seconds, "losses": losses}


def ours(preset: str, args: argparse.Namespace, corpus: Path, tokenizer_dir: Path) -> dict:
    from bertlens.training import PretrainConfig, pretrain

    config = PretrainConfig.preset_config(
        preset,
        seq_length=args.seq_length,
        batch_size=args.batch_size,
        max_steps=args.steps,
        warmup_steps=args.warmup,
        learning_rate=5e-4,
        checkpoint_every=10**9,
        log_every=1,
        watch=False,
        progress=False,
        seed=args.seed,
        precision="bfloat16" if args.bf16 else "float32",
    )
    out = Path(tempfile.mkdtemp(prefix="bench-bertlens-")) / "run"
    result = pretrain(config, corpus, out, tokenizer=tokenizer_dir)
    log = [json.loads(line) for line in (out / "training" / "log.jsonl").read_text().splitlines()]
    shutil.rmtree(out.parent, ignore_errors=True)
    seconds = log[-1]["elapsed"]  # the training loop only: not the corpus tokenization nor the final checkpoint
    return {
        "tool": "bertlens pretrain",
        "tokens": result.tokens,
        "seconds": seconds,
        "losses": [r["loss"] for r in log],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seq-length", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--bf16", action="store_true", help="bfloat16 autocast in every trainer")
    parser.add_argument("--presets", nargs="+", default=list(PRESETS))
    parser.add_argument("--tokenizer", help="a tokenizer folder (default: train a 30522-piece one on the text)")
    parser.add_argument("--plot", help="write the loss curves (SVG) here")
    parser.add_argument("--json", help="write every figure here")
    args = parser.parse_args()

    import torch

    from bertlens.training import TokenizerConfig, train_tokenizer

    torch.set_num_threads(args.threads)
    lines = paragraphs()
    work = Path(tempfile.mkdtemp(prefix="bench-pretrain-"))
    corpus = work / "corpus.txt"
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    tokenizer_dir = Path(args.tokenizer) if args.tokenizer else work / "tokenizer"
    if not args.tokenizer:
        train_tokenizer(corpus, tokenizer_dir, TokenizerConfig(vocab_size=30522))
    results: dict[str, list[dict]] = {}
    for preset in args.presets:
        rows = [
            peer(preset, args, lines, tokenizer_dir, grouped=False),
            peer(preset, args, lines, tokenizer_dir, grouped=True),
            ours(preset, args, corpus, tokenizer_dir),
        ]
        for row in rows:
            row["tokens_per_second"] = row["tokens"] / row["seconds"]
        results[preset] = rows
    print(
        f"{args.steps} steps x {args.batch_size} sequences of <= {args.seq_length}, threads {args.threads}, "
        f"{'bfloat16' if args.bf16 else 'float32'}; {len(lines)} paragraphs of WikiText-2 valid+test\n"
    )
    print("| preset | trainer | real tokens | seconds | tokens/s | vs line-by-line | loss: first, last 5 mean |")
    print("| --- | --- | ---: | ---: | ---: | ---: | --- |")
    for preset, rows in results.items():
        base = rows[0]["tokens_per_second"]
        for row in rows:
            last = row["losses"][-5:]
            print(
                f"| {preset} | {row['tool']} | {row['tokens']} | {row['seconds']:.1f} | {row['tokens_per_second']:.0f} "
                f"| {row['tokens_per_second'] / base:.2f}x | {row['losses'][0]:.3f}, {sum(last) / len(last):.3f} |"
            )
    if args.plot:
        plot(results, args, Path(args.plot))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    shutil.rmtree(work, ignore_errors=True)
    return 0


def plot(results: dict[str, list[dict]], args: argparse.Namespace, file: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, len(results), figsize=(5 * len(results), 3.4), squeeze=False)
    for axis, (preset, rows) in zip(axes[0], results.items(), strict=True):
        for row in rows:
            per_step = row["tokens"] / len(row["losses"])  # tokens seen per step, on average
            xs = [per_step * (i + 1) for i in range(len(row["losses"]))]
            axis.plot(xs, row["losses"], label=f"{row['tool']} ({row['tokens_per_second']:.0f} tok/s)", lw=1)
        axis.set_title(f"{preset}: training loss by text tokens seen", fontsize=9)
        axis.set_xlabel("real tokens seen")
        axis.set_ylabel("masked-LM loss")
        axis.legend(fontsize=7)
    figure.savefig(file, format="svg", bbox_inches="tight", metadata={"Date": None})


if __name__ == "__main__":
    raise SystemExit(main())
