"""The expected answer type: what kind of value a question asks for, and whether a sentence states one."""

import pytest

from kenning.answer.answer_type import question_type, states_answer


@pytest.mark.parametrize(
    "question, kind",
    [
        ("What is the name of the English estate the Count has bought?", "name"),
        ("What was the escaped zoo wolf called?", "name"),
        ("What was the ship's cat called?", "name"),
        ("Under what name was the house bought?", "name"),
        ("What is Renfield's first name?", "name"),
        ("How many marriage offers did Lucy receive in a single day?", "number"),
        ("How old is Dr. Seward?", "number"),
        ("What age does Seward record for his patient?", "number"),
        ("In what year does Jonathan travel to Transylvania?", "year"),
        ("How much money did the Count pay for the estate?", "money"),
        ("How much did Dantès pay for the yacht?", "money"),
        ("How much did the Count of Monte Cristo pay for the island?", "money"),
        ("What does the initial P. stand for in Quincey P. Morris's name?", "name"),
        ("How long did the voyage take?", "duration"),
        ("Why did Lucy refuse him?", None),
        ("Who took command of the Pharaon?", None),
        ("How does Edmond Dantès's father die?", None),
        ("What did the Count throw down for the three women?", None),
    ],
)
def test_question_types(question, kind):
    assert question_type(question) == kind


@pytest.mark.parametrize(
    "sentence, kind, question, stated",
    [
        ("The estate is called Carfax, no doubt.", "name", "What is the name of the estate?", True),
        ("That wolf what we called Bersicker was one of three.", "name", "What was the wolf called?", True),
        ("His bundle of names links us; but we call him Quincey.", "name", "What name do they use?", True),
        (
            "the schooner is a Russian from Varna, and is called the _Demeter_.",
            "name",
            "What was the name of the captain of the Demeter?",
            False,
        ),  # the name the question holds
        ("I touch this in the name of the Father, the Son.", "name", "What is his first name?", False),
        ("Lord Godalming and Quincey Morris came in.", "name", "What is the kitten's name?", False),
        ("We were met by Captain Donelson himself.", "name", "What was the name of the captain?", True),
        # a dash after a name is not part of it: "Godalming--is" is the question's Godalming
        ("Son of Lord Godalming--is coming.", "name", "What is the first name of Lord Godalming?", False),
        ("The P. stands for Pierpont.", "name", "What does the P. stand for?", True),
        ("He has been called to Ring to see his father.", "name", "What was his father's name?", False),
        ("A hamlet which was called Borgo.", "name", "What was the hamlet's name?", True),
        ("He is only nine-and-twenty, and he has an asylum.", "number", "How old is he?", True),
        ("THREE proposals in one day!", "number", "How many offers?", True),
        ("R. M. Renfield, aetat 59.", "number", "What age?", True),
        ("We are to be married on 28 September.", "number", "How old is Mina?", False),  # a date
        ("It is two o'clock, and the doctor will be here.", "number", "How old is she?", False),
        ("No one came, and one of them left.", "number", "How many came?", False),
        ("It was the spring of 1893 when he left.", "year", "In what year?", True),
        ("He left on the third of May.", "year", "In what year?", False),
        ("He paid forty thousand francs for the yacht.", "money", "How much did he pay?", True),
        ("He paid £20 down.", "money", "How much did he pay?", True),
        ("He paid the man and left.", "money", "How much did he pay?", False),
        ("The voyage took three days.", "duration", "How long did it take?", True),
        ("Anything at all.", None, "Why?", True),
    ],
)
def test_sentences_stating_a_value(sentence, kind, question, stated):
    assert states_answer(sentence, kind, question) is stated
