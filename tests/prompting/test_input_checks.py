"""Validity by construction: what makes a generated input no test, said in one phrase."""

from __future__ import annotations

from promptgen.model import Message, PromptInput, PromptUnderTest, TestSample
from promptgen.prompting.input_checks import InputIndex, near_duplicate_inputs, problem
from promptgen.prompting.sample_shape import content_missing, topic_missing, without_lead_in
from promptgen.prompting.writing import describes_itself, echoes

SYSTEM = "Label the sentiment of the review. Answer with one word: positive or negative."


def prompt(**spec: object) -> PromptUnderTest:
    spec.setdefault("type", "string")
    return PromptUnderTest(
        name="p",
        messages=[
            Message(role="system", content=SYSTEM),
            Message(role="user", content="{{review}}"),
        ],
        inputs={"review": PromptInput(name="review", **spec)},  # type: ignore[arg-type]
    )


def why(value: object, **kwargs: object) -> str | None:
    spec = kwargs.pop("spec", {})
    return problem({"review": value}, prompt(**spec), ["review"], **kwargs)  # type: ignore[arg-type]


def test_a_realistic_input_passes() -> None:
    assert why("The kettle boils in two minutes and the lid never leaks.") is None


def test_template_syntax_is_refused_in_every_form() -> None:
    assert why("{{review}}") == "review holds template syntax ({{)"
    assert why("Great, {% if x %}") == "review holds template syntax ({%)"
    assert why("Text: <review>") == "review holds template syntax (<review>)"
    assert why("[review]") == "review holds template syntax ([review])"
    assert (
        why("Dear [Name], please call [Phone Number].") == "review holds template syntax ([Name])"
    )
    for blank in ["[order number]", "[Customer Name]", "[tracking link]", "[Your Company]"]:
        assert why(f"Hi, your parcel {blank} ships today.") == (
            f"review holds template syntax ({blank})"
        )
    # a link's text and a tag are no blanks
    assert why("See [the FAQ Page](https://example.org/faq) for returns, it helps.") is None
    assert why("[feature] Export reports as CSV from the dashboard.") is None
    assert (
        why({"a": ["nested {{x}}"]}, spec={"type": "object"}) == "review holds template syntax ({{)"
    )


def test_stand_ins_for_content_are_refused() -> None:
    for value, found in [
        ("Sample Product", "Sample Product"),
        ("Product A is better than Product B.", "Product A"),
        ("Added new feature X to the dashboard", "feature X"),
        ("Hello, World!", "Hello, World"),
        ("Product Name", "Product Name"),
        ("Lorem ipsum dolor sit amet.", "Lorem ipsum"),
        ("The quick brown fox jumps over the lazy dog.", "The quick brown fox"),
        ("B", "B"),
        ("Here are some sample phone numbers: 555-0101", "sample phone numbers"),
        ("Your signature goes here. Call me.", "goes here"),
        ("Write to [email protected] today.", "[email protected]"),
        ("Hello, [CustomerName]. Your parcel left today.", "[CustomerName]"),
        ("Dear [Customer's Name], sorry for the wait.", "[Customer's Name]"),
        ("New Product", "New Product"),
        ("MyApp", "MyApp"),
    ]:
        assert why(value) == f"review holds a stand-in for content ({found})", value
    for real in [
        "Apple iPhone 15 Pro, 128 GB",
        "The sample size was too small.",
        "Item 4 broke",
        "I went here twice; the address is on the receipt.",
        "See [the setup page](https://example.org/setup) first.",
        "[WIP] parser: keep line numbers",
        "My app crashed twice.",
    ]:
        assert why(real) is None, real
    assert why("B", spec={"enum": ["A", "B"]}) is None  # a choice the input declares


def test_copies_of_the_prompt_the_case_or_the_sample_are_refused() -> None:
    assert (
        why("Answer with one word: positive or negative.") == "review copies the prompt's own text"
    )
    assert why("the customer is mostly unhappy", case="the customer is mostly unhappy") == (
        "review copies the case it was written for"
    )
    stuffed = "Stuffed with repeated keywords, stuffed with repeated keywords"
    assert why(stuffed, case="the title is stuffed with repeated keywords") == (
        "review copies the case it was written for"
    )
    sample = "The blender is loud, but it crushes ice in seconds."
    assert why(sample.upper(), spec={"sample": sample}) == "review repeats the author's sample"
    # a short value (a name, a version, a list of field names) may repeat the default
    assert why("Lumen Notes", spec={"default": "Lumen Notes"}) is None
    assert why("The review text.", spec={"description": "The review text."}) == (
        "review copies the input's description"
    )


def test_empty_and_wrongly_typed_values_are_refused() -> None:
    assert why("   ") == "review is empty"
    assert why("", allowed_empty=frozenset({"review"})) is None  # the case asks for it
    assert (
        why("maybe", spec={"enum": ["yes", "no"]})
        == "review is not of the declared kind (one of yes, no)"
    )
    changes = [{"title": "Add export", "kind": "feature"}]
    assert why([{"title": "Fix crash"}], spec={"type": "array", "sample": changes}) == (
        "review is not of the declared kind (array)"
    )
    assert (
        why([{"title": "Fix crash", "kind": "fix"}], spec={"type": "array", "sample": changes})
        is None
    )


def test_near_duplicates_of_other_tests_are_refused() -> None:
    others = [{"review": "I love this blender, it is fast and quiet!"}]
    assert why("i LOVE this blender... it is fast and quiet", others=others) == (
        "a near-duplicate of another test's input"
    )
    assert why("Quiet and fast: I love this blender.", others=others) == (
        "a near-duplicate of another test's input"
    )  # the same words in another order
    assert why("The blender broke on day two and support never answered.", others=others) is None
    assert not near_duplicate_inputs({"x": ""}, {"x": "?!"})  # two inputs without words


def test_a_third_input_that_opens_like_two_others_is_refused() -> None:
    others = [
        {"review": "What is the total revenue from orders placed by customers in Spain?"},
        {"review": "What is the total number of orders that were cancelled last week?"},
    ]
    third = "What is the total amount refunded to customers who returned a blender?"
    assert why(third, others=others, small_writer=True) == (
        "opens like 2 other tests' inputs ('what is the total' ...)"
    )
    assert why(third, others=others) is None  # whole-prompt mode: a large writer varies
    assert why(third, others=others[:1], small_writer=True) is None  # two may open alike
    other = "Which three customers spent the most in total last year?"
    assert why(other, others=others, small_writer=True) is None
    short = [{"review": "What is the best"}, {"review": "What is the best one"}]
    assert why("What is the best blender?", others=short, small_writer=True) is None  # too short


def test_a_short_value_made_only_of_the_words_it_was_given_is_refused() -> None:
    shop = PromptUnderTest(
        name="titles",
        messages=[Message(role="user", content="Rate the title {{title}} ({{category}}).")],
        inputs={
            "title": PromptInput(name="title", type="string"),
            "category": PromptInput(name="category", type="string"),
        },
    )

    def title(value: str, case: str = "the title is too vague") -> str | None:
        inputs = {"title": value, "category": "Sports & Outdoors"}
        return problem(inputs, shop, ["title"], case=case, small_writer=True)

    assert title("Sports & Outdoors: Sports & Outdoors") == (
        "title only repeats words of the case or of the other inputs"
    )
    assert title("Vague") == "title only repeats words of the case or of the other inputs"
    assert title("Outdoor Gear") is None  # a word of its own: a (weak) title all the same
    assert title("Trail Running Shoes, Waterproof, Size 44") is None
    inputs = {"title": "Vague", "category": "Sports & Outdoors"}
    assert problem(inputs, shop, ["title"], case="the title is too vague") is None  # large


def test_an_authors_shared_value_is_set_aside_when_tests_are_compared() -> None:
    schema = "CREATE TABLE orders (id integer, total_cents integer, placed_at date);" * 3
    a = {"schema": schema, "question": "How many orders were placed in May?"}
    b = {"schema": schema, "question": "Which order had the largest total?"}
    assert near_duplicate_inputs(a, b)  # the long schema outweighs the questions
    shared = {"schema": frozenset([schema])}
    assert not near_duplicate_inputs(a, b, shared)
    assert near_duplicate_inputs(a, {**a, "question": "how many orders were placed in may"}, shared)
    index = InputIndex([a], shared=shared)
    assert index.find(b) is None and index.find(dict(a)) == 0


def test_an_input_that_describes_itself_and_echoed_expectations() -> None:
    assert describes_itself("This is a sample review.")
    assert describes_itself("This text will be ignored by the model.")
    assert describes_itself("Questa recensione è scritta in italiano. Written in Italian.")
    assert not describes_itself("The box arrived on Tuesday and the lid was cracked.")
    # a text about a text, not one
    assert describes_itself("The text is about how to plan a party and includes ideas.")
    assert describes_itself("This is a summary of the provided text.")
    assert describes_itself("The user is writing a detailed summary of an issue.")
    assert describes_itself("I am a text summarization model that can help users.")
    # an input that says what it is for
    assert describes_itself("This is not a product title")
    assert describes_itself("This is a short review.")
    assert describes_itself("- input (string): Customer question")
    assert describes_itself("A long title. It is also a test to ensure titles can be long.")
    assert describes_itself("This title exceeds the 150 character limit on purpose.")
    assert describes_itself("Long title that goes beyond 150 characters")
    # the case said instead of written (the 1.5B, for "states facts without a feeling")
    assert describes_itself(
        "Here is another review where the author only mentions the size and number of "
        "things without any opinion. "
    )
    assert describes_itself("A short review in which the customer praises the lid.")
    # a note to the assistant (the 1.5B, for the summarize sample)
    for note in [
        "This is a simple sentence.",
        "Here is a long piece of text that I want to summarize for a general audience.",
        "The text to be summarized.",
        "The user needs help with the new software. I need to summarize this text.",
        # ... and two the advice after a refused try drew (the summarize sample)
        "Hello everyone! This is a simple summary for a general reader.",
        "The user requested a summary of the latest developments in AI technology.",
        "Please provide a response to the following request: What is the average total?",
    ]:
        assert describes_itself(note), note
    for real in [
        "This is a review of my blender: it broke.",
        "The article I read covers it.",
        "This is a great kettle and I took it on a test drive.",
        "Here is my honest review: the kettle boils fast and the lid stays shut.",
        "Here is a review of my blender: it broke.",
        "I left a review where the shop could see it, and nobody answered.",
        "Can I find a message where the user asked for a refund?",
        "This is a simple kettle and it works.",
        "This is a simple textbook case of bad packaging.",
        "Please give a reply to my email from Monday about the broken kettle.",
        "We want to summarize the quarter in one page: sales rose 4 percent.",
    ]:
        assert not describes_itself(real), real
    inputs = {"review": "The lid cracked the first time I washed it."}
    assert echoes("The lid cracked the first time I washed it", inputs)
    assert echoes("The output should be a single word.", inputs)
    assert not echoes("negative", inputs)


def test_a_model_looping_is_refused() -> None:
    diff = "--- a/app.py\n+++ b/app.py\n@@ -1,3 +1,4 @@\n" + "+    return items[start:end]\n" * 4
    assert why(diff) == "review repeats itself over and over ('+ return items[start:end]')"
    said = "Great kettle. " + "I love it so much! " * 3
    assert why(said) == "review repeats itself over and over ('I love it so much!')"
    assert why("AAA " + "BBB " * 30) == "review repeats itself over and over ('bbb')"
    assert why("Socks Wool Socks Hiking Socks Men Socks Warm Socks") is None  # stuffed
    german = "Wann kann ich " + "von der Rückgabe der Bestellungen " * 5
    assert why(german) == "review repeats itself over and over ('von der Rückgabe der')"
    # a line said twice, or a short line repeated (closing braces), is not a loop
    assert why("It leaks. It leaks. The lid is fine and the handle stays cool.") is None
    code = "def a():\n    pass\n}\n}\n}\ndef b():\n    return 1\n"
    assert why(code) is None


def test_the_form_given_back_or_the_inputs_name_is_refused() -> None:
    diff = "--- a/app.py\n+++ b/app.py\n@@ -1,3 +1,4 @@\n-    start = page\n+    start = page - 1\n"
    spec = {"sample": diff}
    opening = "--- a/app.py\n+++ b/app.py\n@@ -1,3 +1,4 @@\n..."
    assert why(opening, spec=spec) == "review holds only the opening of the author's sample"
    own = "--- a/app.py\n+++ b/app.py\n@@ -1,3 +1,4 @@\n+    return []\n+    # empty pages\n"
    assert why(own, spec=spec) is None  # the same file, lines of its own
    assert why("Review") == "review holds only its own name"


DIFF = """--- a/app/pages.py
+++ b/app/pages.py
@@ -3,4 +3,5 @@ def page(items, n):
-    return items[n:]
+    start = max(n, 0)
+    return items[start:]
"""


def test_where_the_sample_is_a_diff_a_value_must_change_a_line() -> None:
    spec = {"sample": DIFF}
    small = {"small_writer": True}
    header = "--- a/web/form.js\n+++ b/web/form.js\n@@ -9,2 +9,3 @@ function submit(x) {\n"
    broken = "is not of the declared kind (a diff that changes a line)"
    # context lines only; a hunk cut short
    assert why(header + "     return items\n", spec=spec, **small) == f"review {broken}"
    assert why(header + " ...\n", spec=spec, **small) == f"review {broken}"
    assert why(header + "+    total = 0\n ...\n", spec=spec, **small) == f"review {broken}"
    assert why(header + "+ \n", spec=spec, **small) == f"review {broken}"  # a sign and nothing
    assert why(header + "-  send(x)\n+  send(clean(x))\n", spec=spec, **small) is None
    assert why("Fixed the pager.", spec={"sample": "Added a pager."}, **small) is None
    assert why(header + " ...\n", spec=spec) is None  # a large writer: not checked


DRAFT = (
    "Hi Sam, sorry your order arrived with a dented corner. We have sent a replacement by "
    "express post and there is no need to return the damaged one. Your refund for the "
    "shipping fee will show on your card within five working days."
)


def draft(value: str, case: str = "an input where this rule matters", **spec: object) -> str | None:
    """A support draft with the author's English sample (43 words), as a small writer."""
    return why(value, spec={"sample": DRAFT, **spec}, case=case, small_writer=True)


def test_a_text_far_shorter_than_the_authors_sample_is_refused_unless_asked_for() -> None:
    assert draft("Sure, let's go ahead and talk.") == (
        "review is too short to test with (6 words; the sample has 43)"
    )
    assert draft("Hi Ana, your parcel left our depot today and arrives on Friday.") is None
    # the case asks for a short one, and a large writer is not held to the sample's length
    assert draft("Thanks, all sorted!", case="the message is only two to five words long") is None
    assert why("Sure, let's go ahead and talk.", spec={"sample": DRAFT}) is None
    # the test data's value is a sample too: the shortest one counts
    shop = prompt()
    shop.test_samples.append(TestSample(inputs={"review": DRAFT}))
    inputs = {"review": "I like dogs."}
    assert problem(inputs, shop, ["review"], small_writer=True) == (
        "review is too short to test with (3 words; the sample has 43)"
    )


def test_a_text_in_another_language_than_the_sample_is_refused_unless_a_language_is_named() -> None:
    french = "Un agent du support a écrit une réponse, et vous la traduisez pour nous très vite."
    assert draft(french) == (
        "review is in French, and nothing asked for a text in another language than English"
    )
    assert draft(french, case="the message is written in French") is None
    assert draft(french, description="Emails may be in English, German or French.") is None
    # a description that names the sample's own language asks for no other
    assert draft(french, description="The agent's draft, written in English.") == (
        "review is in French, and nothing asked for a text in another language than English"
    )
    assert draft("Merci beaucoup, Sam, for your patience with the parcel and the refund!") is None


def test_a_text_that_opens_with_the_prompts_own_line_is_refused() -> None:
    summarize = PromptUnderTest(
        name="summarize",
        messages=[
            Message(role="system", content="You write short summaries for busy readers."),
            Message(role="user", content="Summarize this text for a {{audience}} reader:\n"),
            Message(role="user", content="{{input}}"),
        ],
        inputs={
            "audience": PromptInput(name="audience", type="string", sample="general"),
            "input": PromptInput(name="input", type="string"),
        },
    )

    def text(value: str) -> str | None:
        inputs = {"audience": "general", "input": value}
        return problem(inputs, summarize, ["input"], small_writer=True)

    assert text("Summarize this text for a general reader: The council met on Monday.") == (
        "input copies the prompt's own text"
    )
    # 6 words of a line with its short sample filled in, anywhere in the text
    assert text("Notes. You write short summaries for busy readers, said the editor.") == (
        "input copies the prompt's own text"
    )
    assert text("Summarize the week: the council met on Monday and voted 7 to 2.") is None


def test_a_text_after_the_prompts_own_line_is_kept_without_the_line() -> None:
    summarize = PromptUnderTest(
        name="summarize",
        messages=[
            Message(role="system", content="You write short summaries for busy readers."),
            Message(
                role="user", content="Summarize this text for a {{audience}} reader:\n{{input}}"
            ),
        ],
        inputs={
            "audience": PromptInput(name="audience", type="string"),
            "input": PromptInput(name="input", type="string"),
        },
    )
    council = "The council voted 7 to 2 on Monday to extend the bus route."
    # the placeholder filled in any way, in any case, with or without quotes
    assert without_lead_in(f"Summarize this text for a general reader: {council}", summarize) == (
        council
    )
    quoted = f'summarize this text for a Technical reader:\n"{council}"'
    assert without_lead_in(quoted, summarize) == council
    # the line alone, or with too little after it, stays as written (and is refused)
    alone = "Summarize this text for a general reader: "
    assert without_lead_in(alone, summarize) == alone
    assert without_lead_in(f"{alone}Hello there.", summarize) == f"{alone}Hello there."
    # a text that does not open with the prompt's line, or is no text, is unchanged
    assert without_lead_in(council, summarize) == council
    assert without_lead_in(f"Note: {alone}{council}", summarize) == f"Note: {alone}{council}"
    assert without_lead_in(["a", "list"], summarize) == ["a", "list"]


def test_notes_to_the_assistant_and_texts_about_their_writer_describe_themselves() -> None:
    assert describes_itself("Here is the text to summarize: This text has a lot of facts.")
    assert describes_itself("Please provide the text that you want summarized.")
    assert describes_itself("I am writing a summary of a long text about climate change.")
    assert describes_itself("Hello everyone,\nThis is my email signature.\nJohn")
    assert describes_itself("The customer loved the product, but they also had some issues.")
    assert not describes_itself("The customer service was slow, but the kettle is superb.")


def test_blanks_in_any_language_and_a_greeting_for_a_value_are_refused() -> None:
    dutch = "Ik ben [Naam], [Rol], van [Organisatie] en ben bereikbaar op [Telefoonnummer]."
    assert why(dutch) == "review holds template syntax ([Naam])"
    assert why("[WIP] The [Login] page times out after two minutes on mobile.") is None
    assert why('"Hello"') == 'review holds a stand-in for content ("Hello")'
    assert why("Hello there, the kettle arrived dented.") is None


def test_a_content_case_needs_what_it_names_in_its_usual_form() -> None:
    phones = "the document contains phone numbers"
    assert content_missing(phones, "Dear John, I am writing to request a loan of $1000.") == (
        "phone number"
    )
    assert content_missing(phones, "Call Ana Ruiz on (030) 555-1234 after nine.") is None
    facts = "the message contains facts, amounts, dates, deadlines and promises"
    assert content_missing(facts, "We will keep you updated on progress soon.") == (
        "amount or date"
    )
    assert content_missing(facts, "Your refund of €25.00 is on its way.") is None  # one is enough
    assert content_missing(facts, "The engineer visits on Tuesday morning.") is None
    ids = "the message contains order numbers, tracking numbers, email addresses and links"
    assert content_missing(ids, "Hello Sam, thanks for writing to us.") == (
        "e-mail address or link or order or tracking number"
    )
    assert content_missing(ids, "Your order #48213 left the depot.") is None
    assert content_missing("the document contains a value that contains a comma", "x") is None


def test_a_case_about_a_subject_needs_the_subject_named() -> None:
    only = "the review talks about nothing but the delivery company"
    slow = "I'm not sure why this product is so slow. It always ends up being late."
    assert topic_missing(only, slow) == "nothing but the delivery company"
    assert topic_missing(only, "The delivery driver threw the box over the fence.") is None
    both = "the review talks about both the product or service and the delivery company"
    # the side the prompt singles out must be named; the product may be "the blender"
    assert topic_missing(both, "Great blender, but the courier was late.") == (
        "the delivery company"
    )
    assert topic_missing(both, "Great blender, but the delivery company lost it twice.") is None
    assert topic_missing("the article does not cover the question", "anything") is None
