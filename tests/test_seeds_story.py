"""The seeds' story told right (issue 33): the road in time order, each stop saying what it took from the one
before; credits where the seeds put them; what the seeds say that the app had wrong or left out. Each claim is
checked in both languages, on the page a learner opens (fast tier, tiny zoo), and, where it quotes or credits a
seed, against that seed's text. The seeds are ../shared/seeds beside the repository: without them these tests
fail (CI has them), they never skip."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from components.i18n import strings
from components.road import ROAD, ready_lessons
from tests.conftest import all_text, app, open_page, shown

SEEDS = Path(__file__).resolve().parent.parent.parent / "shared" / "seeds"
EN, ZH = strings("en"), strings("zh")


def seed(number: str) -> str:
    """Seed `number` (000, 002, 003, 004) as plain text: Markdown emphasis gone, quotes and spaces made plain."""
    found = sorted(SEEDS.glob(f"{number}_*.txt"))
    assert found, f"seed {number} is not in {SEEDS}: these tests read the seeds (CI has them)"
    return plain(found[0].read_text(encoding="utf-8"))


def plain(text: str) -> str:
    for fancy, simple in (("“", '"'), ("”", '"'), ("‘", "'"), ("’", "'"), ("*", ""), ("\\", "")):
        text = text.replace(fancy, simple)
    return re.sub(r"\s+", " ", text)


def both(key: str) -> tuple[str, str]:
    """What a reader sees of `key` in English and in Chinese."""
    return norm(shown(EN[key])), norm(shown(ZH[key]))


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def expander_text(at, title: str) -> str:  # noqa: ANN001
    """What a learner reads on opening the expander titled `title`."""
    box = next(e for e in at.expander if shown(e.label) == shown(title))
    return norm("\n".join(shown(m.value) for m in box.markdown))


# -- (2) the road: time order, and what each stop took from the one before ---------------------------
ORDER = ["onehot", "static", "transformer", "elmo", "ulmfit", "gpt", "bert", "gpt2"]
NAMED = {"onehot": "one-hot", "static": "word2vec", "transformer": "Transformer", "elmo": "ELMo", "ulmfit": "ULMFiT"}
NAMED |= {"gpt": "GPT-1", "bert": "BERT"}


def test_the_road_runs_in_time_order() -> None:
    assert [stop.key for stop in ROAD] == ORDER  # Transformer 2017 first, GPT-1 before BERT, GPT-2 after it
    years = {stop.key: stop.year for stop in ROAD}
    assert years["transformer"] == "2017-06" and years["elmo"] == "2018-02" and years["gpt"] == "2018-06"
    assert years["bert"] == "2018-10" and years["gpt2"] == "2019-02"
    en, zh = both("road.gpt.name")
    assert "GPT-1" in en and "OpenAI Transformer" in en and "GPT-1" in zh
    # Every lesson is still reachable, the GPT lesson with GPT-2 (and linked from GPT-1's stop).
    lessons = [lesson.key for lesson in ready_lessons()]
    assert lessons[:5] == ["onehot", "embeddings", "transformer", "elmo", "transfer"] and lessons[-1] == "gpt"
    assert [lesson.key for lesson in ROAD[ORDER.index("gpt")].see_also] == ["gpt"]


@pytest.mark.parametrize(("before", "stop"), list(zip(ORDER, ORDER[1:])))
def test_every_stop_says_what_it_took_from_the_one_before(before: str, stop: str) -> None:
    for text in both(f"road.{stop}.took"):
        assert NAMED[before] in text, (stop, text)


def test_bert_took_the_openai_transformer_and_gave_it_both_sides() -> None:
    en, zh = both("road.bert.took")
    assert en.startswith("From GPT-1:") and "both its left and its right context" in en
    assert zh.startswith("承接 GPT-1") and "左右两边" in zh
    assert "conditioned on both left and right context" in seed("004")  # The Illustrated BERT's words
    assert "transformer gave us a fine-tunable pre-trained model based on the Transformer" in seed("004")
    en, zh = both("road.gpt2.took")
    assert en.startswith("From BERT, nothing: GPT-2 keeps GPT-1's") and zh.startswith("从 BERT 什么都没拿")
    en, _ = both("road.elmo.took")
    assert en.startswith("From the Transformer, nothing yet: ELMo still reads with LSTMs")
    en, zh = both("road.ulmfit.took")
    assert "January 2018" in en and "side by side" in en and "2018 年 1 月" in zh  # ELMo and ULMFiT: concurrent


def test_home_draws_the_stops_in_time_order_with_their_hand_overs() -> None:
    at = app().run()
    assert not at.exception
    names = [shown(m.value) for m in at.markdown if re.fullmatch(r"\*\*\d · .+\*\*", m.value)]
    assert names == [
        "1 · One-hot (1-of-N)",
        "2 · word2vec / GloVe",
        "3 · The Transformer",
        "4 · ELMo",
        "5 · ULMFiT: transfer learning",
        "6 · GPT-1 (the OpenAI Transformer)",
        "7 · BERT",
        "8 · GPT-2",
    ]
    captions = [shown(c.value) for c in at.caption]
    assert captions.index("2017-06") < captions.index("2018-02") < captions.index("2018-10") < captions.index("2019-02")
    text = all_text(at)
    for stop in ORDER[1:]:
        assert norm(shown(EN[f"road.{stop}.took"]))[:40] in norm(text), stop
    assert "From GPT-1: a pre-trained Transformer" in text
    links = {shown(link.proto.label): link.proto.page for link in at.get("page_link")}
    assert links["GPT (the lesson, further on)"] == "gpt" and links["GPT"] == "gpt"
    assert {lesson.key for lesson in ready_lessons()} <= set(links.values())


def test_home_in_chinese_keeps_the_order() -> None:
    at = app(lang="zh").run()
    names = [shown(m.value) for m in at.markdown if re.fullmatch(r"\*\*\d · .+\*\*", m.value)]
    assert names[2:] == ["3 · Transformer", "4 · ELMo", "5 · ULMFiT：迁移学习", "6 · GPT-1（OpenAI Transformer）"] + [
        "7 · BERT",
        "8 · GPT-2",
    ]
    assert "承接 GPT-1：预训练好的 Transformer" in all_text(at)


# -- (3) the A B C D figure and "not fully bidirectional" are the blog post's (seed 002) ------------------
def test_seeing_itself_and_not_fully_bidirectional_are_credited_to_the_blog_post(tiny_zoo: Path) -> None:
    blog, lecture, notes = seed("002"), seed("003"), seed("000")
    assert "A B C D" in blog and "自己看见自己" in blog and "不完全双向" in blog
    for other in (lecture, notes):
        assert "A B C D" not in other and "自己看见自己" not in other and "不完全双向" not in other
    en, zh = both("mlm.why_intro")
    assert "the A B C D figure of the blog post comparing word2vec, ELMo and BERT" in en and "lecture" not in en
    assert "中文博客里 A B C D 的图" in zh and "讲义" not in zh
    assert "自己看见自己" in en and "indirectly see itself in a multi-layered context" in en
    assert "indirectly see itself in a multi-layered context" in seed("004")
    en, zh = both("elmo.lm_note")
    assert "The blog post comparing word2vec, ELMo and BERT calls this “不完全双向”" in en and "lesson notes" not in en
    assert "中文博客把这叫做“不完全双向”" in zh and "课程笔记" not in zh
    assert "A B C D figure of the blog post" in all_text(open_page("pages/masked_lm.py"))
    assert "calls this “不完全双向”, not fully bidirectional" in all_text(open_page("pages/elmo.py"))


# -- (4) the October preprint's eleven tasks, and the NAACL paper's --------------------------------------
def test_the_eleven_tasks_of_october_2018_are_not_the_naacl_list() -> None:
    assert "2018年10月" in seed("002") and "11项" in seed("002")
    illustrated = seed("004")  # its task figure is the preprint's: NER, no SQuAD 2.0
    assert "CoNLL-2003 NER" in illustrated and "SQuAD v1.1" in illustrated and "2.0" not in illustrated
    en, zh = both("records.bert_intro")
    assert "In that October preprint the eleven were GLUE's eight, SQuAD 1.1, CoNLL-2003 named entities and SWAG" in en
    assert "NAACL 2019" in en and "counts SQuAD 2.0 instead" in en
    assert "CoNLL-2003 命名实体识别" in zh and "改算 SQuAD 2.0" in zh


# -- (5) VGGNet: a feature vector handed to a classifier, not fine-tuning ---------------------------------
def test_the_vggnet_picture_is_the_vector_hand_off(tiny_zoo: Path) -> None:
    illustrated = seed("004")
    assert "this vector hand-off should be reminiscent of what happens between the convolution part" in illustrated
    assert "NLP's ImageNet moment" in illustrated
    en, zh = both("transfer.imagenet")
    assert "VGG" not in en and "picture" not in en and "NLP's ImageNet moment" in en
    assert "VGG" not in zh and "ImageNet 时刻" in zh
    en, zh = both("using.vgg")
    assert "VGGNet" in en and "hands one feature vector to the fully-connected layers" in en
    assert "not about fine-tuning" in en and "不是微调" in zh
    text = all_text(open_page("pages/transfer.py"))
    assert "and The Illustrated BERT calls 2018 NLP's ImageNet moment" in text and "VGG" not in text


# -- the nine missing items --------------------------------------------------------------------------------
def test_what_a_downstream_task_is_on_each_page_that_relies_on_it(tiny_zoo: Path) -> None:
    en, zh = both("story.downstream")
    quote = "downstream tasks is what the field calls those supervised-learning tasks that utilize a pre-trained"
    assert quote in en and quote in seed("004")
    assert "下游任务" in zh and "下游任务" in seed("003")
    assert "A downstream task is a task with labelled examples" in all_text(open_page("pages/elmo.py"))
    assert "A downstream task is" in expander_text(open_page("pages/probing.py"), EN["probing.how_title"])


def test_seed_002s_thread_each_step_moves_work_into_pre_training() -> None:
    blog = seed("002")
    said = "做的其实主要是把下游具体NLP任务的活逐渐移到预训练产生词向量上"
    assert (
        said in blog and "static向量变成上下文相关的dynamic向量" in blog and "word-level向量变成sentence-level" in blog
    )
    en, zh = both("home.thread")
    assert said in zh and "static" in zh and "sentence-level" in zh
    assert "moves step by step into pre-training" in en and "static vectors become dynamic ones" in en
    assert "word-level vectors become sentence-level ones" in en
    at = app().run()
    assert "moves step by step into pre-training" in expander_text(at, EN["home.thread_title"])


def test_what_bert_stands_for_chinese_characters_and_ernie(tiny_zoo: Path, offline_tokenizer) -> None:  # noqa: ANN001
    lecture = seed("003")
    assert "Bidirectional Encoder Representations from Transformers (BERT)" in lecture
    assert "使用字作为基本单位更好" in lecture  # Chinese BERT reads characters
    assert "ERNIE" in lecture and "转为中文设计" in lecture and "1904.09223" in lecture
    for key in ("road.bert.idea", "inputs.background"):
        assert all("Bidirectional Encoder Representations from Transformers" in text for text in both(key))
    en, zh = both("inputs.background")
    assert "Chinese BERT (bert-base-chinese) reads characters, not words" in en and "读的是字，不是词" in zh
    assert "so 银行 (bank) is two tokens, 银 and 行" in en
    assert len(offline_tokenizer.tokenize("银行")) == 2  # BERT's tokenizer: one token per Chinese character
    assert "ERNIE (Baidu, 2019)" in en and "1904.09223" in en and "ERNIE（百度，2019" in zh
    box = expander_text(open_page("pages/bert_inputs.py"), EN["inputs.background_title"])
    assert "BERT stands for Bidirectional Encoder Representations from Transformers" in box
    assert "reads characters, not words" in box and "ERNIE" in box


def test_the_masked_lm_comes_from_the_cloze_task(tiny_zoo: Path) -> None:
    assert "(where it's called a Cloze task)" in seed("004")
    en, zh = both("mlm.cloze")
    assert "Cloze task (Taylor, 1953)" in en and "(where it's called a Cloze task)" in en
    assert "完形填空" in zh and "Taylor 1953" in zh
    assert "Cloze task (Taylor, 1953)" in all_text(open_page("pages/masked_lm.py"))


def test_fact_checking_and_where_to_get_bert_on_using_bert() -> None:
    import model_zoo

    illustrated, lecture = seed("004"), seed("003")
    assert 'Output: "Claim" or "Not Claim"' in illustrated and "Fact-checking" in illustrated
    assert "github.com/google-research/bert" in lecture and "BERT repo" in illustrated
    en, zh = both("using.fact_check")
    assert (
        "fact-checking, where the input is a sentence and the output “Claim” or “Not Claim”" in en and "事实核查" in zh
    )
    en, zh = both("using.try")
    for name in (
        "github.com/google-research/bert",
        "bert-base-uncased",
        "bert-base-chinese",
        "bert-base-multilingual-cased",
    ):
        assert name in en and name in zh
    for name in ("bert-base-uncased", "bert-base-chinese", "bert-base-multilingual-cased"):
        assert model_zoo.get_card(name).hub_repo  # the prefetch command the text gives works for them


def test_gpt2s_staged_release(tiny_zoo: Path) -> None:
    said = "BERT是你能够得到模型，GPT-2却是你得不到的"
    assert said in seed("003") and "只发布了GPT-2的小模型" in seed("003")
    for key in ("road.gpt2.limit", "gpt.release"):
        en, zh = both(key)
        assert "February 2019" in en and "November" in en and "BERT you can get, GPT-2 you can't" in en
        assert said in zh
    assert "GPT-2 was not released at once" in all_text(open_page("pages/gpt.py"))
    assert "BERT you can get, GPT-2 you can't" in all_text(app().run())


# -- five others ------------------------------------------------------------------------------------------
def test_gpts_reading_prompt_has_a_passage(tiny_zoo: Path) -> None:
    lecture = seed("003")
    assert '"Q:"' in lecture and '"A:"' in lecture and "CoQA" in lecture  # d1 … dN, "Q:", the question, "A:"
    at = open_page("pages/gpt.py")
    at.button(key="prompt_qa").click().run()
    prompt = at.text_area(key="prompt").value
    passage, question = prompt.split("\nQ: ")
    assert passage.startswith("In meteorology, precipitation") and len(passage.split()) > 20
    assert question.endswith("\nA:")
    assert both("gpt.prompt_qa") == ("Passage, Q: … A:", "短文，问：… 答：")


def test_qa_positions_say_why_they_are_not_the_lecture_s(offline_tokenizer) -> None:  # noqa: ANN001
    from model_zoo.lessons import tasks

    lecture = seed("003")
    assert "gravity s = 17, e = 17" in lecture and "within a cloud s = 77, e = 79" in lecture
    passage = tasks.written_passages()[tasks.LECTURE_PASSAGE][0].passage
    words = [w.strip(".,") for w in passage.split()]
    assert words.index("gravity") + 1 == 17 and words.index("within") + 1 == 46  # the lecture counts words
    pieces = offline_tokenizer.tokenize(passage)  # bert-base-uncased's WordPiece vocabulary
    within = next(i for i in range(len(pieces)) if pieces[i : i + 3] == ["within", "a", "cloud"])
    assert pieces.index("gravity") + 1 == 21 and within + 1 == 63
    en, zh = both("using.qa_positions")
    for number in ("s = 17", "77–79", "21", "63–65", "46–48"):
        assert number in en and number in zh
    assert "meteor ##ology" in en and "meteor" in pieces[1]


def test_multilingual_102_and_104_are_two_checkpoints() -> None:
    assert "multi-lingual model covering 102 languages" in seed("004") and "104种语言" in seed("003")
    en, zh = both("using.ml_intro")
    assert "both are right, for two checkpoints" in en and "covers 102" in en and "covers 104" in en
    assert "两个都对" in zh and "102 种" in zh and "104 种" in zh
    assert "the cased checkpoint, trained on the Wikipedias of 104 languages" in both("using.ml_note_english")[0]


def test_the_negative_samples_slider_says_what_it_does(tiny_zoo: Path) -> None:
    blog = seed("002")
    assert "负采样" in blog and "sigmoid二分类器" in blog
    en, zh = both("emb.negative_help")
    assert "random “noise” words" in en and "sigmoid" in en and "sigmoid" in zh and "噪声" in zh
    at = open_page("pages/embeddings.py")
    assert shown(at.slider(key="w2v_negative").help).startswith("For each real pair (a word and a word near it)")


def test_the_elmo_lesson_dates_its_paper(tiny_zoo: Path) -> None:
    assert "arxiv.org/abs/1802.05365" in seed("003")  # arXiv 1802: February 2018
    en, zh = both("elmo.intro")
    assert "Peters et al., “Deep contextualized word representations”, NAACL 2018, on arXiv since February 2018" in en
    assert "NAACL 2018，2018 年 2 月发布于 arXiv" in zh
    assert "NAACL 2018, on arXiv since February 2018" in all_text(open_page("pages/elmo.py"))


def test_using_bert_shows_what_it_was_given_above(tiny_zoo: Path) -> None:
    """One run of the page (it trains its tiny heads): every item above that lives on Using BERT."""
    at = open_page("pages/using_bert.py")
    assert not at.exception
    text = all_text(at)
    assert "SQuAD 1.1, CoNLL-2003 named entities and SWAG" in text  # (4) the October preprint's eleven
    assert "the lecture counts words, and so gets s = 17" in text  # s and e against the lecture's
    assert "both are right, for two checkpoints" in text  # 102 and 104
    background = expander_text(at, EN["using.background_title"])
    assert "A downstream task is" in background
    assert "fact-checking, where the input is a sentence" in background
    assert "not about fine-tuning" in background  # (5) VGGNet's hand-off
    assert "github.com/google-research/bert" in expander_text(at, EN["using.try_title"])
