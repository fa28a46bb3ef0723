"""Shared fixtures: tiny random checkpoints (for tests only) and a private Hugging Face cache."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

# Before huggingface_hub is imported anywhere: tests see an empty, private HF cache, so a
# model someone prefetched on this machine cannot change what they find.
_HF_TMP = tempfile.mkdtemp(prefix="contextlab-hf-")
os.environ["HF_HOME"] = _HF_TMP
os.environ["HF_HUB_CACHE"] = str(Path(_HF_TMP) / "hub")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("CONTEXTLAB_DEVICE", "cpu")
os.environ.setdefault("CONTEXTLAB_WARMUP", "0")  # tests load what they use, when they use it
# numba's compiled umap-learn (model_zoo.disk.keep_compiled) outlives the tests' own cache folders: each test
# worker and run loads it rather than compiling for 16-18 s (numba keys it on umap-learn's source).
os.environ.setdefault("NUMBA_CACHE_DIR", str(Path.home() / ".cache" / "contextlab-tests" / "numba"))

import pytest  # noqa: E402

if TYPE_CHECKING:
    import model_zoo

ROOT = Path(__file__).resolve().parent.parent

# A WordPiece vocabulary in which "embeddings" splits as em ##bed ##ding ##s.
WORDS = (
    "the a man went to bank deposit his money river we sat on of and is was it "
    "stick fish water boat cheque at i , . ! ? em ##bed ##ding ##s play ##ing"
).split()
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def make_bert_tokenizer(folder: Path):
    from transformers import BertTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    return BertTokenizerFast(vocab={w: i for i, w in enumerate(SPECIALS + WORDS)}, do_lower_case=True)


def save_tiny_bert(folder: Path, *, pretraining: bool = True, qa: bool = False, layers: int = 2) -> Path:
    """A random BertForPreTraining (MLM + NSP heads), 2 layers, 4 heads, 32 dims; without `pretraining`
    a bare BertModel (an encoder); with `qa` a BertForQuestionAnswering (start/end layer)."""
    import torch
    from transformers import BertConfig, BertForPreTraining, BertForQuestionAnswering, BertModel

    tokenizer = make_bert_tokenizer(folder)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=layers,
        num_attention_heads=4,
        intermediate_size=37,
        max_position_embeddings=64,
    )
    torch.manual_seed(0)
    model = BertForQuestionAnswering(config) if qa else BertForPreTraining(config) if pretraining else BertModel(config)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def save_tiny_gpt2(folder: Path) -> Path:
    """A random GPT2LMHeadModel with a small byte-level BPE tokenizer trained here."""
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2Config, GPT2LMHeadModel, GPT2TokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    bpe = ByteLevelBPETokenizer()
    corpus = ["I deposited the cheque at the bank.", "We sat on the river bank and watched the water."] * 20
    bpe.train_from_iterator(corpus, vocab_size=300, min_frequency=1, special_tokens=["<|endoftext|>"])
    bpe.save_model(str(folder))
    tokenizer = GPT2TokenizerFast(vocab=str(folder / "vocab.json"), merges=str(folder / "merges.txt"))
    config = GPT2Config(vocab_size=len(tokenizer), n_embd=32, n_layer=2, n_head=4, n_positions=64)
    torch.manual_seed(0)
    GPT2LMHeadModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def save_tiny_llama(folder: Path, tokenizer_from: Path, *, tied: bool = False) -> Path:
    """A random LlamaForCausalLM with grouped keys (4 query heads share 2 key heads) and rotary positions."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_from))
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        tie_word_embeddings=tied,
    )
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_bert(tmp_path_factory.mktemp("tiny-bert"))


@pytest.fixture(scope="session")
def tiny_gpt2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_gpt2(tmp_path_factory.mktemp("tiny-gpt2"))


def _fake_hub_snapshot(repo: str, files_from: Path, names: list[str] | None = None) -> Path:
    """Lay `files_from` out in the test HF cache as if `repo` had been downloaded."""
    import shutil

    cache = Path(os.environ["HF_HUB_CACHE"])
    repo_dir = cache / ("models--" + repo.replace("/", "--"))
    revision = "0" * 40
    snapshot = repo_dir / "snapshots" / revision
    snapshot.mkdir(parents=True, exist_ok=True)
    (repo_dir / "refs").mkdir(exist_ok=True)
    (repo_dir / "refs" / "main").write_text(revision)
    for item in files_from.iterdir():
        if item.is_file() and (names is None or item.name in names):
            shutil.copy2(item, snapshot / item.name)
    return snapshot


@pytest.fixture
def hub_unreachable(monkeypatch: pytest.MonkeyPatch) -> None:
    """Point the Hub at a closed local port: what an offline classroom server sees."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")


@pytest.fixture
def fake_hub():
    """`fake_hub(repo, folder)` lays a checkpoint out in the test HF cache as if `repo` had been
    prefetched; at the end of the test the cache, and the server's memory of it, are as before."""
    import shutil

    made: list[Path] = []

    def lay_out(repo: str, files_from: Path, names: list[str] | None = None) -> Path:
        snapshot = _fake_hub_snapshot(repo, files_from, names)
        made.append(snapshot.parent.parent)
        return snapshot

    yield lay_out
    for repo_dir in made:
        shutil.rmtree(repo_dir, ignore_errors=True)
    import serving

    serving.availabilities.clear()
    serving.load_model.clear()


@pytest.fixture(scope="session")
def offline_models():
    """The offline pack, loaded once per test session (real weights)."""
    import model_zoo

    cache: dict[str, object] = {}

    def get(name: str):
        if name not in cache:
            cache[name] = model_zoo.load(name)
        return cache[name]

    return get


@pytest.fixture(scope="session")
def offline_tokenizer():
    """BERT's uncased WordPiece tokenizer, as minilm-l6 ships it (no weights loaded)."""
    from transformers import AutoTokenizer

    from model_zoo.registry import get_card, package_file

    return AutoTokenizer.from_pretrained(str(package_file(get_card("minilm-l6"))))


@pytest.fixture(autouse=True)
def fast_tier_loads_no_real_weights(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test not marked slow (or browser) must not load the offline pack's weights: the fast
    tier (`pytest -m "not slow and not browser"`) runs in about two minutes on tiny models only.
    Tokenizers and configs may be read; loading an offline-pack model fails the test and says why."""
    if request.node.get_closest_marker("slow") or request.node.get_closest_marker("browser"):
        return
    from model_zoo import loading

    load_card = loading._load_card

    def refuse_the_pack(card, device=None):  # noqa: ANN001, ANN202
        if card.offline:  # the offline pack, or weights trained here and shipped in assets/
            raise AssertionError(f"this test loads the real weights of {card.name}: mark it @pytest.mark.slow")
        return load_card(card, device)  # a classic from a fake cache of tiny weights is fine

    monkeypatch.setattr(loading, "_load_card", refuse_the_pack)


@pytest.fixture(autouse=True, scope="session")
def component_manifests_scanned_once() -> Iterator[None]:
    """Each new AppTest scans every installed distribution's metadata for Streamlit component manifests
    (0.2-0.3 s, some 400 times in the fast tier); the installed packages do not change during a run."""
    import functools

    from streamlit.components.v2 import manifest_scanner

    scan = manifest_scanner.scan_component_manifests
    manifest_scanner.scan_component_manifests = functools.cache(scan)
    yield
    manifest_scanner.scan_component_manifests = scan


# -- Streamlit AppTest: every test runs the app as a served app would -----------------------
TIMEOUT = 180  # model pages load real weights on first use


def app(**query: str):
    """The whole app (app.py) with `query` in the URL, not yet run."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    for key, value in query.items():
        at.query_params[key] = value
    return at


def open_page(path: str, **query: str):
    """Run the app on page `path` (pages/....py) with `query` in the URL."""
    from components.road import CLASSROOM

    at = app(**query)
    if path == CLASSROOM.file:  # its url_path (/class) is not its file's name: AppTest finds such a page
        at.run()  # only once a first run has registered the app's pages
    at.switch_page(path)
    return at.run()


def rendered(markdown: str) -> tuple[str, str]:
    """`markdown` rendered as CommonMark with tables and strikethrough (what Streamlit builds on):
    the HTML, and the text a reader sees."""
    from html import unescape

    from markdown_it import MarkdownIt

    html = MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(markdown)
    return html, unescape(re.sub(r"<[^>]+>", "", html)).replace("\u2060", "").strip()  # word joiners are invisible


def keeps_bio_rule(tags: list[str]) -> bool:
    """Whether every I- tag of a BIO sequence continues an entity of its type (a B- or I- of it just before)."""
    return all(not b.startswith("I-") or a in (f"B-{b[2:]}", b) for a, b in zip(["O", *tags], tags))


def all_text(at) -> str:  # noqa: ANN001
    """Every title, paragraph, caption, subheader, info and warning of a page run, as one string."""
    parts = [e.value for kind in ("title", "markdown", "caption", "subheader", "info", "warning") for e in at.get(kind)]
    return "\n".join(shown(str(p)) for p in parts)


def chart(at, key: str) -> dict:  # noqa: ANN001
    """The Plotly chart drawn with `key`, as the browser gets it."""
    import json

    found = next(c for c in at.get("plotly_chart") if c.proto.id.endswith(f"-{key}"))
    return json.loads(found.proto.spec)


def title_of(spec: dict) -> str:
    """A Plotly chart's title as a reader reads it: its lines (wrapped to fit a phone) joined by spaces."""
    return spec["layout"]["title"]["text"].replace("<br>", " ")


def light_chart_elements(at) -> list:  # noqa: ANN001
    """The page's light chart components (components/light_charts.py), not the other v2 components a page
    mounts (the class box's keeper, components/classroom_view.py, which draws nothing)."""
    return [c for c in at.get("bidi_component") if c.proto.component_name == "contextlab_light_chart"]


def light_charts(at) -> dict[str, dict]:  # noqa: ANN001
    """The page's charts drawn by the app's own script (components/light_charts.py), by key, as the browser
    gets them."""
    import json

    return {c.proto.id.rsplit("-", 1)[-1]: json.loads(c.proto.bytes) for c in light_chart_elements(at)}


def light_lines(at, key: str) -> dict[str, list[float]]:  # noqa: ANN001
    """A light line chart's series: name -> values."""
    return {s["name"]: s["values"] for s in light_charts(at)[key]["series"]}


def forming_answers(accuracy, tokens) -> tuple[str, str, int | None]:  # noqa: ANN001
    """The two senses-forming moments' answers, computed from a packed run's raw arrays (accuracy (S, W, L),
    tokens (S,)) apart from the page's code: (when, which layer, the step index where the first layer gets
    halfway from its low before its peak to its last mean accuracy; None where none rises 5 points)."""
    mean = accuracy.mean(1)
    halfway = {}
    for layer in range(mean.shape[1]):
        low = int(mean[: int(mean[:, layer].argmax()) + 1, layer].argmin())  # its low before its peak
        if mean[-1, layer] - mean[low, layer] >= 0.05:
            target = (mean[low, layer] + mean[-1, layer]) / 2
            halfway[layer] = next(s for s in range(low, len(mean)) if mean[s, layer] >= target - 1e-12)
    first = min(halfway.values(), default=None)
    firsts = [str(k) for k, s in halfway.items() if s == first]
    which = "never" if first is None else firsts[0] if len(firsts) == 1 else "together"
    share = None if first is None else tokens[first] / tokens[-1]
    when = "never" if share is None else "tenth" if share <= 0.1 else "half" if share <= 0.5 else "later"
    return when, which, first


def shown(markdown: str) -> str:
    """What a reader sees of `markdown`: "**glove\\-6b**" is "glove-6b"."""
    return rendered(markdown)[1]


@pytest.fixture(autouse=True)
def served_like_a_running_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """AppTest re-arms Streamlit's legacy pages-folder mode before every run, which a real
    server leaves for good once app.py has called st.navigation. Without this, each run
    starts in that mode and components.frame reruns it, dropping a widget value a test set.
    (A fresh server's first deep link, where the mode is real, is a browser test.)"""
    from streamlit.runtime.pages_manager import PagesManager
    from streamlit.testing.v1 import app_test

    class NavigationOnly(PagesManager):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            PagesManager.uses_pages_directory = False

    monkeypatch.setattr(app_test, "PagesManager", NavigationOnly)


@pytest.fixture(autouse=True)
def fresh_data_cache(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    """Results cached by one test must not answer for the next; loaded models may stay. In the fast
    tier the server's memo of slow results (serving.SLOW) is emptied too; the slow tier keeps it, as a
    server does, so that results of real weights that take a minute are computed once per run."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")  # the classics are out of reach
    import streamlit as st

    import serving

    fast = not (request.node.get_closest_marker("slow") or request.node.get_closest_marker("browser"))
    st.cache_data.clear()
    if fast:
        serving.SLOW.clear()
    yield
    st.cache_data.clear()
    if fast:
        serving.SLOW.clear()


@pytest.fixture(scope="module")
def bert(tiny_bert: Path) -> model_zoo.MaskedLM:
    """The tiny random BERT with its MLM and NSP heads, loaded."""
    import model_zoo

    model = model_zoo.load(tiny_bert)
    assert isinstance(model, model_zoo.MaskedLM)
    return model


@pytest.fixture(scope="module")
def gpt2(tiny_gpt2: Path) -> model_zoo.CausalLM:
    """The tiny random GPT-2, loaded."""
    import model_zoo

    model = model_zoo.load(tiny_gpt2)
    assert isinstance(model, model_zoo.CausalLM)
    return model


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory, tiny_gpt2: Path) -> model_zoo.CausalLM:
    """A tiny random Llama (SmolLM2's architecture: rotary positions, grouped KV heads), loaded."""
    import model_zoo

    model = model_zoo.load(save_tiny_llama(tmp_path_factory.mktemp("tiny-llama"), tiny_gpt2))
    assert isinstance(model, model_zoo.CausalLM)
    return model


@pytest.fixture(scope="session")
def tiny_mntp(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A tiny LlamaForCausalLM (tied embeddings, the byte-level BPE of the tiny GPT-2) and, beside it,
    random LoRA adapters on every linear layer and a [MASK] vector, saved as train_mntp exports them."""
    import torch
    from peft import LoraConfig, get_peft_model
    from safetensors.torch import save_file
    from transformers import LlamaForCausalLM

    from model_zoo.bidirectional import MASK_VECTOR
    from model_zoo.training.train_mntp import TARGETS

    root = tmp_path_factory.mktemp("tiny-mntp")
    causal = save_tiny_llama(root / "causal", save_tiny_gpt2(root / "tokenizer"), tied=True)
    model = LlamaForCausalLM.from_pretrained(str(causal))
    lora = LoraConfig(r=4, lora_alpha=8, target_modules=list(TARGETS), init_lora_weights=False)
    trained = root / "trained"
    get_peft_model(model, lora).save_pretrained(str(trained))
    save_file({"mask": torch.randn(32)}, str(trained / MASK_VECTOR))
    return causal, trained


@pytest.fixture(scope="session")
def tiny_mntp_reader(tiny_mntp: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A reader's adapter folder on the tiny masked LM, as `train_qa --base` exports one (random start/end
    layer, LoRA adapters that start as none): the tiny zoo serves it as the server does (`load_mntp_reader`)."""
    from peft import LoraConfig, get_peft_model

    from model_zoo.bidirectional import reader_from_mntp
    from model_zoo.training.train_mntp import TARGETS

    folder = tmp_path_factory.mktemp("tiny-mntp-reader")
    lora = LoraConfig(r=4, lora_alpha=8, target_modules=list(TARGETS), modules_to_save=["qa_outputs"])
    get_peft_model(reader_from_mntp(*tiny_mntp)[0], lora).save_pretrained(str(folder))
    return folder


# -- the tiny zoo: every offline model as a tiny random one, under its own name (fast tier) --------------
TINY_STATIC_WORDS = (
    "the a man woman king queen prince princess boy girl bank river money water stick fish dog cat car "
    "paris france rome italy stockholm sweden cairo egypt has had was is good bad happy sad play playing "
    "apple banana house tree city country walk run river bank deposit cheque"
).split()


@pytest.fixture(scope="session")
def tiny_zoo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Tiny random checkpoints in folders named as the offline models they stand for."""
    from model_zoo.elmo import BOS, EOS, UNK
    from tests.test_elmo import OPTIONS, write_elmo

    root = tmp_path_factory.mktemp("tiny-zoo")
    save_tiny_bert(root / "minilm-l6", pretraining=False)
    save_tiny_bert(root / "minilm-l6-mlm")
    save_tiny_bert(root / "minilm-l6-qa", qa=True)
    save_tiny_llama(root / "smollm2-135m", save_tiny_gpt2(root / "bpe"))
    write_elmo(root / "elmo-mini", OPTIONS, [BOS, EOS, UNK, *dict.fromkeys([*WORDS, *TINY_STATIC_WORDS])])
    return root


@pytest.fixture
def tiny_zoo(
    tiny_zoo_dir: Path,
    tiny_mntp: tuple[Path, Path],
    tiny_mntp_reader: Path,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
):
    """Every offline model a page asks for is a tiny random one of its kind, under its own name: the pages
    run their whole code in the fast tier. What they show is nonsense; that they show it is the test.
    The server's loaded models and caches are emptied before and after, so no real test meets a tiny model."""
    import numpy as np
    import torch

    import serving
    from model_zoo import loading
    from model_zoo.bidirectional import BidirectionalLM, BidirectionalReader, load_mntp_reader, served_mntp
    from model_zoo.elmo import load_elmo
    from model_zoo.onednn import bf16_wanted
    from model_zoo.static import StaticModel

    classic = loading._load_card

    def tiny(card, device=None):  # noqa: ANN001, ANN202
        if not card.offline:
            return classic(card, device)
        cpu = torch.device("cpu")
        if card.name == "glove-6b-50d":
            words = list(dict.fromkeys(TINY_STATIC_WORDS))
            vectors = np.random.default_rng(0).normal(size=(len(words), 8)).astype(np.float32)
            return StaticModel.from_arrays(card.name, words, vectors, lowercase=True)
        if card.name == "smollm2-135m-mlm":  # as the server loads them (bf16 where CONTEXTLAB_BF16 asks)
            return BidirectionalLM(card.name, *served_mntp(*tiny_mntp), cpu)
        if card.name == "smollm2-135m-qa":
            return BidirectionalReader(card.name, *load_mntp_reader(*tiny_mntp, tiny_mntp_reader), cpu)
        if card.name == "smollm2-135m":  # as the server loads the GGUF model (bf16 where CONTEXTLAB_BF16 asks)
            folder = str(tiny_zoo_dir / card.name)
            return loading._load_transformers(card.name, folder, "causal_lm", "cpu", bf16=bf16_wanted("cpu"))
        if card.kind == "elmo":
            return load_elmo(tiny_zoo_dir / card.name, name=card.name, device="cpu")
        return loading._load_folder(tiny_zoo_dir / card.name, "cpu")

    from model_zoo.lessons import sense_data

    monkeypatch.setattr(loading, "_load_card", tiny)
    monkeypatch.setattr(sense_data, "load_precomputed", lambda name: None)  # no maps of the real weights
    monkeypatch.setenv("CONTEXTLAB_CACHE", str(tmp_path / "cache"))  # disk caches of tiny vectors stay here
    # but for the work a server keeps on disk across restarts keyed on the weights it was computed from (Using
    # BERT's task heads, probing's and Word senses' vectors): done once for the session's tiny weights (2-8 s a
    # model and task) and read back by later pages, as a restarted server reads it
    (tmp_path / "cache").mkdir(exist_ok=True)
    for kept in ("heads", "probing", "senses"):
        (shared := tiny_zoo_dir.parent / f"kept-{kept}").mkdir(exist_ok=True)
        (tmp_path / "cache" / kept).symlink_to(shared, target_is_directory=True)
    from serving import lesson_inside

    holding_models = (
        serving.load_model,
        serving._fill_mask_batcher,
        serving._word_vector_batcher,
        lesson_inside.shipped_lens,
    )
    for resource in holding_models:  # a real model loaded by an earlier test must not answer here, nor a tiny one later
        resource.clear()
    serving.SLOW.clear()
    yield tiny_zoo_dir
    for resource in holding_models:
        resource.clear()
    serving.SLOW.clear()


# -- a PostgreSQL server for the class store (tests/test_classroom_store.py, tests/test_class_browser.py) --
def _postgres_bin() -> Path:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parent.parent.name))
    if not found and shutil.which("initdb"):
        return Path(shutil.which("initdb") or "").parent
    if not found:
        pytest.fail("PostgreSQL is not installed here: run `make postgresql` (Debian's postgresql) first.")
    return found[-1].parent


def _as_postgres(args: list[str]) -> subprocess.CompletedProcess[str]:
    """Run a PostgreSQL program as the postgres user (the server refuses to run as root)."""
    prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    return subprocess.run(prefix + args, check=True, capture_output=True, text=True, timeout=60)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """A PostgreSQL server of its own, in a temporary folder, reached over a unix socket there:
    yields a URL without a database name."""
    bin_dir = _postgres_bin()
    folder = Path(tempfile.mkdtemp(prefix="contextlab-pg-"))
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
    data, port = folder / "data", _free_port()
    _as_postgres([str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync"])
    options = f"-k {folder} -p {port} -c listen_addresses='' -c fsync=off"
    _as_postgres([str(bin_dir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(folder / "log"), "-w", "start"])
    try:
        yield f"postgresql://postgres@/{{}}?host={folder}&port={port}"
    finally:
        _as_postgres([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"])
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def fresh_database(server: str, name: str) -> Iterator[str]:
    """A new, empty database `name` on a `postgres_server` (dropped afterwards): its URL."""
    from sqlalchemy import create_engine, text

    admin = create_engine(server.format("postgres").replace("postgresql://", "postgresql+psycopg://"))
    with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as c:
        c.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
        c.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield server.format(name)
    finally:
        with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as c:
            c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
