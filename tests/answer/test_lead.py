"""The one-line answer that leads a cited answer (kenning.answer.lead)."""

from kenning.answer.answer_type import NUMBER, question_type
from kenning.answer.lead import LEAD_WORDS, lead_line, question_form
from kenning.surfaces.render import answer_text


def test_questions_are_sorted_by_form():
    assert question_form("Who helps Dantès escape?") == "who"
    assert question_form("To whom did he give the ring?") == "who"
    assert question_form("How many offers did Lucy receive?") == "how many"
    assert question_form("Where was the wolf found?") == "where"
    assert question_form("When did the ship arrive?") == "when"
    assert question_form("Why did she refuse?") == "why"
    assert question_form("How did Mina fasten the shawl?") == "how"
    assert question_form("Did Arthur marry Lucy?") == "yes/no"
    assert question_form("In which hotel did he stay?") == "which"


def test_who_takes_the_name_nearest_the_questions_words_that_the_question_does_not_hold():
    known = {"faria", "dantes", "villefort"}.__contains__
    sentence = "Villefort signed the order, and it was Faria who helped Dantès escape through the tunnel."
    assert lead_line("Who helped Dantès escape?", None, [sentence], known) == "Faria"
    # a capitalised word the index does not know as a name is not an answer
    assert lead_line("Who helped Dantès escape?", None, ["Happily Dantès escaped."], known) == (
        "Happily Dantès escaped."
    )


def test_where_when_and_counts_take_their_span():
    known = {"bistritz", "golden krone", "jonathan"}.__contains__
    where = lead_line(
        "Where did Jonathan stay?", None, ["Jonathan stayed at the Golden Krone in Bistritz."], known
    )
    assert where == "Golden Krone"
    assert (
        lead_line("When did it happen?", None, ["It was on 4 May, the eve of St. George's Day."]) == "4 May"
    )
    question = "How many offers did Lucy receive?"
    assert question_type(question) == NUMBER
    assert lead_line(question, NUMBER, ["Lucy had THREE proposals in one day."]) == "THREE proposals"


def test_anything_else_leads_with_the_best_sentence_cut_short():
    long = " ".join(["word"] * (LEAD_WORDS + 10)) + "."
    lead = lead_line("Why did she refuse him?", None, [long, "Another sentence."])
    assert lead.endswith("…") and len(lead.split()) == LEAD_WORDS + 1
    assert lead_line("Why?", None, []) == ""


def test_the_text_answer_leads_with_the_one_line_answer():
    result = {"found": True, "lead": "Faria", "answer": "Faria dug the tunnel.", "citations": []}
    assert answer_text(result).splitlines()[:2] == ["Answer: Faria", "Faria dug the tunnel."]
