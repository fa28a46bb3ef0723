"""Everyday English written by SmolLM2-135M-Instruct, for language models that lack it (issue 31).

elmo-mini reads 3.2M words of Wikipedia summaries, fortunes, chat and WordNet glosses: "hang out"
occurs 4 times in it, and after "After work we like to hang" its forward LM says "." (SmolLM2, trained
on trillions of tokens, says "out" at 71%). As TinyStories (Eldan and Li, 2023) was made, a capable
model is asked for short everyday texts (a topic x a form: a diary entry, friends talking, a note, a
story for a child, ...), and what it writes becomes training text, **labelled as written by
SmolLM2-135M-Instruct** (Apache-2.0) wherever it is used.

`python scripts/write_everyday.py [--out DIR] [--hours H] [--batch B] [--device cuda]`

Resumable: OUT/texts.jsonl gets one record a text ({"i", "topic", "form", "seed", "text"}); a restart
goes on from the first index not written. Text i always comes from the same prompt and seed, so a run
stopped and resumed writes what one run would. Read it with `read_texts(OUT)`.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from model_zoo.registry import cache_root  # noqa: E402

DEFAULT_OUT = cache_root() / "everyday"
LABEL = "written by SmolLM2-135M-Instruct (Apache-2.0), prompted by scripts/write_everyday.py"

TOPICS = (
    "going to the park after school",
    "a rainy weekend at home",
    "cooking dinner with family",
    "a first day at a new school",
    "a birthday party",
    "losing a phone",
    "a trip to the beach",
    "learning to ride a bike",
    "a visit to the dentist",
    "shopping for new shoes",
    "a football match",
    "moving to a new house",
    "a cat that will not come down from a tree",
    "a snowy morning",
    "baking bread",
    "a broken washing machine",
    "meeting a new neighbour",
    "a long train journey",
    "planting a vegetable garden",
    "a power cut in the evening",
    "a school play",
    "a lost dog",
    "a summer holiday",
    "getting lost in a city",
    "a sleepover with friends",
    "a job interview",
    "a day at the zoo",
    "fixing a flat tyre",
    "a picnic in the rain",
    "a library visit",
    "making new friends",
    "a camping trip",
    "a doctor's appointment",
    "cleaning a messy bedroom",
    "a thunderstorm at night",
    "a visit to grandparents",
    "a music lesson",
    "a bus that is late",
    "a surprise present",
    "a hospital visit",
    "a weekend with friends",
    "a weekend market",
    "a swimming lesson",
    "a snow day off school",
    "a family argument and making up",
    "a wedding",
    "a new puppy",
    "a museum trip",
    "a late-night phone call",
    "waiting at the airport",
    "a haircut that went wrong",
    "a garden full of birds",
    "a cold with a runny nose",
    "saving money for something special",
    "a sports day",
    "a noisy neighbour",
    "a walk in the woods",
    "a quiz night at a pub",
    "painting a room",
    "a car that will not start",
    "a village fair",
    "a first job",
    "a ferry crossing",
    "a kite on a windy hill",
    "a farm visit",
    "a bad dream",
    "a fishing trip",
    "a broken arm",
    "a lemonade stand",
    "teaching a parent to use a phone",
    "a science project",
    "tidying the garage",
    "an exam week",
    "a bike ride to the lake",
    "a busy restaurant kitchen",
    "a fire drill at school",
    "a road trip with friends",
    "looking after a baby brother",
    "a tooth falling out",
    "a football team losing",
    "a kitchen full of smoke",
    "a trip to the mountains",
    "a shop that sold out",
    "a school trip",
    "growing tomatoes",
    "an old photo album",
    "a new bike",
    "the first warm day of spring",
    "staying up late to watch the stars",
    "a cinema trip",
    "a forgotten umbrella",
    "a friend who moved away",
    "washing the car",
    "a lost wallet found again",
    "a family dinner",
)
# Free time with friends and family, where everyday phrasal verbs live ("hang out", "catch up", "pick
# up", "go out"): the corpus of the first run held 24 "hang out"s in 1.1M words (`--free-time`).
FREE_TIME = (
    "hanging out with friends after work",
    "what you and your friends do on a Friday night",
    "catching up with an old friend",
    "what teenagers do after school",
    "a lazy Sunday with nothing planned",
    "making plans for the weekend with a friend",
    "meeting a friend at a cafe",
    "a friend who always arrives late",
    "where young people in a small town spend their evenings",
    "inviting a new colleague to join the group",
    "a summer evening in the park with friends",
    "staying in or going out tonight",
)
# Social life and spare time more widely (`--social`, issue 31's third writing): the free-time texts were
# 111k words on 12 topics, repeated 16 times in elmo-mini's last stage, which raised its held-out
# perplexity; these are new situations, so that the everyday phrasal verbs come in varied sentences.
SOCIAL = (
    "going out for dinner with colleagues",
    "working out at the gym before work",
    "a night out for a friend's birthday",
    "meeting up with cousins in the holidays",
    "picking a friend up from the station",
    "chilling at home with a film",
    "eating out at a new restaurant",
    "a Saturday afternoon in town with friends",
    "playing video games with a brother",
    "a barbecue in the back garden",
    "a board game evening",
    "going to a concert with friends",
    "a coffee break at work",
    "calling a friend you have not seen for years",
    "a day off in the middle of the week",
    "a walk with the dog and a neighbour",
    "friends sharing a flat",
    "a karaoke night",
    "a five-a-side football game after work",
    "teenagers at the shopping centre",
    "a family game night",
    "a bowling trip",
    "dropping by a friend's house",
    "going round to a neighbour's for tea",
    "a club that meets every Thursday",
    "getting together to watch a match",
    "a long lunch on a Sunday",
    "making new friends in a new city",
    "a quiet evening reading",
    "an after-work drink",
    "friends planning a holiday together",
    "a trip to the cinema that sold out",
    "spending time with grandparents at the weekend",
    "a dance class",
    "walking around the town at night",
    "a party that went on too late",
    "a slow morning in bed on a holiday",
    "friends cooking together",
    "a picnic by the river",
    "texting friends to decide where to meet",
)
FORMS = (
    "Write a short diary entry about {topic}. Use simple everyday English.",
    "Write a short conversation between two friends about {topic}.",
    "Write a short story for a young child about {topic}.",
    "Write a short text message to a friend about {topic}.",
    "Describe {topic} in a few simple sentences, as a person would tell it to a friend.",
    "Write a short letter to a grandparent about {topic}.",
    "Write what a parent might say to their child about {topic}.",
    "Write a short, simple news story for children about {topic}.",
    "Write a short conversation between a parent and a child about {topic}.",
    "Write a few lines a teenager might post about {topic}.",
    "Tell a friend, in a few simple sentences, what you did last weekend: {topic}.",
    "Write a short email to a work friend about {topic}.",
)


def prompts(topics: tuple[str, ...] = TOPICS) -> Iterator[tuple[int, str, str, int]]:
    """(index, topic, form, seed) for ever: every topic x form, then again with the next seed."""
    i = 0
    for seed in itertools.count():  # not itertools.product: it would read count() to the end first
        for form, topic in itertools.product(FORMS, topics):
            yield i, topic, form, seed
            i += 1


def read_texts(out: Path = DEFAULT_OUT) -> list[dict]:
    path = out / "texts.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def looping(text: str, n: int = 4, most: float = 0.2) -> bool:
    """Whether a text repeats itself (a small model's loop): more than `most` of its word n-grams are
    repeats of an earlier one."""
    words = text.lower().split()
    grams = [tuple(words[k : k + n]) for k in range(len(words) - n + 1)]
    return bool(grams) and 1 - len(set(grams)) / len(grams) > most


def plain(sentence: str) -> str:
    """A sentence as training text: no emoji or other symbols, no markdown marks, plain spaces."""
    import re
    import unicodedata

    kept = "".join(ch for ch in sentence if not unicodedata.category(ch).startswith(("S", "C")) or ch in "$%&+=<>'")
    kept = re.sub(r"[*#_~`|]+|<<|>>|\[|\]", " ", kept)
    return " ".join(kept.split())


def write_text(out: Path, path: Path) -> int:
    """The texts as training text for train_elmo / build corpora: one sentence a line, a blank line
    between texts (a text's last sentence, cut by the token limit, is dropped). Returns the sentences."""
    import re

    lines: list[str] = []
    for record in read_texts(out):
        if looping(record["text"]):
            continue
        sentences = [s for s in map(plain, re.split(r"(?<=[.!?])\s+|\n+", record["text"])) if len(s.split()) >= 3]
        if sentences and not sentences[-1].endswith((".", "!", "?", '"')):
            sentences = sentences[:-1]
        if sentences:
            lines += [*sentences, ""]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return sum(1 for line in lines if line)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--hours", type=float, default=2.0)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--max-new-tokens", type=int, default=200)
    parser.add_argument("--temperature", type=float, default=0.8)
    parser.add_argument("--top-p", type=float, default=0.9)
    parser.add_argument(
        "--no-repeat",
        type=int,
        default=4,
        help="no n-gram of this size twice in a text (small models loop); 0: none (transformers checks it in "
        "Python, text by text, which is most of a step's time with a large batch on a GPU)",
    )
    parser.add_argument(
        "--repetition-penalty", type=float, default=1.0, help="transformers' penalty on tokens already written"
    )
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--limit", type=int, default=0, help="stop after this many texts in all (0: none)")
    topics = parser.add_mutually_exclusive_group()
    topics.add_argument("--free-time", action="store_true", help="the FREE_TIME topics instead of TOPICS")
    topics.add_argument("--social", action="store_true", help="the SOCIAL topics instead of TOPICS")
    parser.add_argument("--text", type=Path, default=None, help="write what OUT holds as training text here, then stop")
    args = parser.parse_args(argv)
    if args.text is not None:
        print(f"{write_text(args.out, args.text):,} sentences in {args.text}")
        return

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from model_zoo.training.train_mntp import causal_dir

    if args.threads:
        torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    done = len(read_texts(args.out))
    source = causal_dir()
    tokenizer = AutoTokenizer.from_pretrained(str(source), padding_side="left")
    if tokenizer.pad_token is None:  # some transformers versions convert the GGUF without one
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(
        str(source), dtype=torch.bfloat16 if args.device.startswith("cuda") else torch.float32
    )
    model = model.eval().to(args.device)
    began, written = time.time(), 0
    log = (args.out / "log.txt").open("a", encoding="utf-8")
    chosen = FREE_TIME if args.free_time else SOCIAL if args.social else TOPICS
    todo = itertools.islice(prompts(chosen), done, None)
    with (args.out / "texts.jsonl").open("a", encoding="utf-8") as sink:
        while time.time() - began < args.hours * 3600 and not (args.limit and done + written >= args.limit):
            batch = list(itertools.islice(todo, args.batch))
            chats = [
                tokenizer.apply_chat_template(
                    [{"role": "user", "content": form.format(topic=topic)}], tokenize=False, add_generation_prompt=True
                )
                for _, topic, form, _ in batch
            ]
            inputs = tokenizer(chats, return_tensors="pt", padding=True).to(args.device)
            torch.manual_seed(batch[0][0] * 7919 + batch[0][3])  # one seed a batch: a resumed run writes the same
            with torch.inference_mode():
                out = model.generate(
                    **inputs,
                    do_sample=True,
                    temperature=args.temperature,
                    top_p=args.top_p,
                    max_new_tokens=args.max_new_tokens,
                    no_repeat_ngram_size=args.no_repeat,
                    repetition_penalty=args.repetition_penalty,
                    pad_token_id=tokenizer.pad_token_id or tokenizer.eos_token_id,
                )
            texts = tokenizer.batch_decode(out[:, inputs["input_ids"].shape[1] :], skip_special_tokens=True)
            for (i, topic, form, seed), text in zip(batch, texts):
                record = {"i": i, "topic": topic, "form": form, "seed": seed, "text": text.strip()}
                sink.write(json.dumps(record, ensure_ascii=False) + "\n")
            sink.flush()
            written += len(batch)
            new_tokens = int((out[:, inputs["input_ids"].shape[1] :] != tokenizer.pad_token_id).sum())
            rate = written / (time.time() - began)
            print(
                f"{done + written} texts, {rate * 60:.0f} a minute, last batch {new_tokens} tokens",
                file=log,
                flush=True,
            )


if __name__ == "__main__":
    main()
