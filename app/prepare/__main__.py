"""`python -m app.prepare real|twin|tiny`: builds the model folders the server and tests load."""

import argparse
import json
import logging
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from app.prepare import PrepareError
from app.prepare.source import HUB_ID, resolve_source
from app.settings import PROJECT_ROOT, REAL_MODEL_DIR, TWIN_MODEL_DIR

# torch, transformers and optimum are imported inside the commands: they take seconds to
# load, and `real` should report an unreachable hub before paying for them.
if TYPE_CHECKING:
    from tokenizers import Tokenizer
    from transformers import XLMRobertaConfig

TINY_MODEL_DIR = PROJECT_ROOT / "tests" / "assets" / "tiny-reranker"
TINY_SEED = 0


def real(args: argparse.Namespace) -> None:
    checkpoint = resolve_source(args.source)
    from app.prepare.build import build_model_folder
    from app.prepare.manifest import Identity

    identity = Identity(
        name=HUB_ID, source=args.source, weights="real", tokenizer=f"XLM-RoBERTa SentencePiece, {HUB_ID}"
    )
    build_model_folder(checkpoint, args.out, identity)


def twin(args: argparse.Namespace) -> None:
    from app.prepare.tokenizer import XLMR_PIECES, train_tokenizer
    from app.prepare.twin import base_config

    name = "bge-reranker-base (offline twin, random weights)"
    tokenizer = train_tokenizer(pieces=XLMR_PIECES)
    build_random(base_config(), tokenizer, args.out, seed=args.seed, name=name, description=twin_description())


def twin_tokenizer(args: argparse.Namespace) -> None:
    """A twin built before its vocabulary had XLM-R's size gets the new tokenizer; its model stays."""
    from app.prepare.manifest import describe_tokenizer
    from app.prepare.tokenizer import XLMR_PIECES, save_tokenizer, train_tokenizer

    manifest_file = args.out / "manifest.json"
    if not manifest_file.exists():
        raise PrepareError(f"no twin in {args.out}: run `just twin`")
    manifest = json.loads(manifest_file.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory(prefix="lab-tokenizer-") as tmp:
        save_tokenizer(train_tokenizer(pieces=XLMR_PIECES), Path(tmp))
        os.replace(Path(tmp) / "tokenizer.json", args.out / "tokenizer.json")
    manifest["tokenizer"] = describe_tokenizer(args.out, twin_description())
    manifest_file.write_text(json.dumps(manifest, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


def twin_description() -> str:
    from app.prepare.tokenizer import DESCRIPTION, XLMR_DESCRIPTION

    return DESCRIPTION + XLMR_DESCRIPTION


def tiny(args: argparse.Namespace) -> None:
    from app.prepare.tokenizer import train_tokenizer
    from app.prepare.twin import tiny_config

    tokenizer = train_tokenizer()
    config = tiny_config(vocab_size=tokenizer.get_vocab_size())
    build_random(config, tokenizer, args.out, seed=TINY_SEED, name="tiny test reranker (random weights)")


def build_random(
    config: "XLMRobertaConfig", tokenizer: "Tokenizer", out: Path, *, seed: int, name: str, description: str = ""
) -> None:
    """A seeded random checkpoint saved like a snapshot, then taken down the real model's path."""
    from app.prepare.build import build_model_folder
    from app.prepare.manifest import Identity
    from app.prepare.tokenizer import DESCRIPTION, save_tokenizer
    from app.prepare.twin import save_random_checkpoint

    with tempfile.TemporaryDirectory(prefix="lab-checkpoint-") as tmp:
        checkpoint = Path(tmp)
        save_random_checkpoint(config, checkpoint, seed=seed)
        save_tokenizer(tokenizer, checkpoint)
        source = f"random init of the XLM-RoBERTa config below, torch seed {seed}"
        identity = Identity(name=name, source=source, weights="random", tokenizer=description or DESCRIPTION)
        build_model_folder(checkpoint, out, identity)


def parser() -> argparse.ArgumentParser:
    cli = argparse.ArgumentParser(
        prog="python -m app.prepare", description="Build the model folders the server and the tests load."
    )
    commands = cli.add_subparsers(dest="command", required=True, metavar="COMMAND")

    cmd = commands.add_parser("real", help=f"export and quantize {HUB_ID} (needs the hub or a local snapshot)")
    cmd.add_argument(
        "--source",
        default=os.environ.get("LAB_MODEL_SOURCE") or HUB_ID,
        help="hub id or local snapshot folder (default: $LAB_MODEL_SOURCE, else %(default)s)",
    )
    cmd.add_argument("--out", type=Path, default=REAL_MODEL_DIR, help="default: %(default)s")
    cmd.set_defaults(run=real)

    cmd = commands.add_parser("twin", help="the offline twin: same architecture and size, random weights")
    cmd.add_argument("--out", type=Path, default=TWIN_MODEL_DIR, help="default: %(default)s")
    cmd.add_argument("--seed", type=int, default=0, help="torch seed for the weights (default: %(default)s)")
    cmd.set_defaults(run=twin)

    cmd = commands.add_parser("twin-tokenizer", help="give an existing twin the tokenizer with XLM-R's 250,002 pieces")
    cmd.add_argument("--out", type=Path, default=TWIN_MODEL_DIR, help="default: %(default)s")
    cmd.set_defaults(run=twin_tokenizer)

    cmd = commands.add_parser("tiny", help="a tiny random reranker for tests (committed, under 2 MB)")
    cmd.add_argument("--out", type=Path, default=TINY_MODEL_DIR, help="default: %(default)s")
    cmd.set_defaults(run=tiny)
    return cli


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("app.prepare").setLevel(logging.INFO)
    try:
        args.run(args)
    except PrepareError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
