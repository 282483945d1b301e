"""A fresh held-out half: written after the first held-out half had been tuned on.

``held_out.py`` was meant never to be tuned on, but it has been since, so its figure no
longer counts as held out. This half was written by a different hand, without reading
``dev.py`` or ``held_out.py`` (only the package's ``Question``/``Request`` and the test
servers' data), on other topics and sentence shapes: polite and indirect forms, "could
you", context given in the same sentence. It was committed before any use and is never
used for tuning; ``--halves fresh`` runs it.
"""

from __future__ import annotations

from tools.bench.tool_questions import (
    CALC_ANY,
    FILES,
    GIT,
    LIST_DIR,
    MCP_CALC,
    MCP_CONVERT,
    MEM_RECALL,
    MEM_SAVE,
    READ_FILE,
    SQL_DESCRIBE,
    SQL_READ,
    SQL_TABLES,
    TIME_ANY,
    C,
    Question,
    Request,
    conversion,
)

QUESTIONS: list[Question] = [
    # built-in: the time in a city
    Question("Could you tell me what time it is in Buenos Aires right now?", TIME_ANY, ("buenos_aires",)),
    Question("My sister lives in Seoul; would she still be awake at this hour?", TIME_ANY, ("seoul",)),
    Question("I'd like to know the local time in Nairobi, please.", TIME_ANY, ("nairobi",)),
    # built-in: arithmetic
    Question("A loaf takes 375 grams of flour, so how much flour do seven loaves need?", CALC_ANY, ("375",)),
    Question("What's eighteen percent of 2,450?", CALC_ANY, ("2450|2,450",)),
    Question("Would you work out the square root of 1764 for me?", CALC_ANY, ("1764",)),
    # built-in: timers and reminders
    Question("Would you mind starting a ten minute timer for the rice?", ("set_timer",), ("10|ten", "rice")),
    Question(
        "The bread has just gone into the oven, so give me a forty-five minute countdown.",
        ("set_timer",),
        ("45|forty",),
        timers=(("tea", 240),),
    ),
    Question(
        "Remind me at seven this evening to water the tomatoes.",
        ("set_reminder",),
        ("tomato", "7|19|seven"),
    ),
    Question("How long is left before the laundry is done?", ("list_timers",), timers=(("laundry", 1500),)),
    Question(
        "The eggs finished early, so you can stop their timer.",
        ("cancel_timer",),
        ("egg",),
        timers=(("eggs", 420), ("bread", 2400)),
    ),
    Question(
        "Could you give the roast another five minutes?",
        ("adjust_timer",),
        ("5|five",),
        timers=(("roast", 1800),),
    ),
    # MCP: the shop database
    Question("Which product in the shop is running lowest on stock?", (SQL_READ,), ("stock",)),
    Question(
        "Could you look up which city Bob lives in, from the shop's customer records?",
        (SQL_READ,),
        ("customers", "bob"),
    ),
    Question("I was wondering how much the shop charges for tea.", (SQL_READ,), ("products", "tea")),
    Question("Before I write a query, which tables are there in the shop database?", (SQL_TABLES, SQL_READ)),
    Question(
        "I'd like to know what fields the shop keeps in its customers table.",
        (SQL_DESCRIBE, SQL_READ),
        ("customers",),
    ),
    # MCP: the garden planner repository
    Question(
        "Who made the latest commit to the garden planner, and what did it say?",
        (f"{GIT}git_log", f"{GIT}git_show"),
    ),
    Question(
        "Is there anything in the garden planner repo that hasn't been committed yet?",
        (f"{GIT}git_status", f"{GIT}git_diff_unstaged"),
    ),
    Question(
        "Could you show me the differences in the garden planner since the last commit?",
        (f"{GIT}git_diff_unstaged", f"{GIT}git_status", f"{GIT}git_diff"),
    ),
    # MCP: memory
    Question(
        "Please keep in mind that my neighbour Priya is allergic to peanuts.", MEM_SAVE, ("priya", "peanut")
    ),
    Question(
        "For future reference, the spare key is under the blue flowerpot by the door.",
        MEM_SAVE,
        ("key", "flowerpot|flower pot"),
    ),
    Question("Did I ever tell you anything about my neighbour Priya?", MEM_RECALL, ("priya|read_graph",)),
    Question("What do you have stored about my car from earlier?", MEM_RECALL, ("car|read_graph",)),
    # MCP: the notes folder
    Question("Could you read me what's on the shopping list in my notes?", READ_FILE, ("shopping",)),
    Question("What did I jot down in my ideas note?", READ_FILE, ("ideas",)),
    Question("Which files do I have in the notes folder at the moment?", LIST_DIR),
    Question(
        "How large is the ideas file in my notes?",
        (f"{FILES}get_file_info", f"{FILES}list_directory_with_sizes"),
        ("ideas|list_directory_with_sizes",),
    ),
    # MCP: time conversion and the calculator server
    Question(
        "When it's nine in the morning in Sydney, what time is that in London?",
        (MCP_CONVERT,),
        (*conversion("australia/sydney", "europe/london"), "09:00"),
    ),
    Question(
        "I've got a call at 14:30 Lisbon time; what would that be for a colleague in Chicago?",
        (MCP_CONVERT,),
        (*conversion("europe/lisbon", "america/chicago"), "14:30"),
    ),
    Question("Evaluate the expression 12 * (7 + 3) ** 2, if you would.", (MCP_CALC, C), ("12",)),
    # no tool
    Question("Who painted the ceiling of the Sistine Chapel?", ()),
    Question("Could you suggest a name for a grey kitten?", ()),
    Question("What's the difference between baking soda and baking powder?", ()),
    Question("Why do onions make people cry when they're chopped?", ()),
    Question("I'm flying to Tokyo next month, so have you any tips for beating jet lag?", ()),
    Question("How would I say good morning in Portuguese?", ()),
    Question("Is a tomato really a fruit or a vegetable?", ()),
]
"""Built-in tools, the six servers' tools and questions that need no tool."""

LAUNDRY = (("laundry", 900),)

REQUESTS: list[Request] = [
    # devices
    Request("Could you lock the front door before I go to bed?", timers=LAUNDRY),
    Request("Would you warm the house up a couple of degrees before I get home?", timers=LAUNDRY),
    Request("Switch the oven off once the roast timer rings, please.", timers=(("roast", 1200),)),
    Request("I'm pulling into the driveway, so open the garage door for me.", timers=LAUNDRY),
    Request("Could you pause the film on the television while I grab a snack?"),
    Request("Please run the sprinkler on the back lawn for twenty minutes.", timers=LAUNDRY),
    # calls and messages
    Request("I'm running late, so ring my boss and say I'll be ten minutes behind.", timers=LAUNDRY),
    Request("Would you mind emailing the landlord about the leaking tap?"),
    Request("Take a photo of the living room and send it to my phone.", timers=LAUNDRY),
    # shopping and money
    Request("Can you put a bag of coffee beans in my online basket?", timers=LAUNDRY),
    Request("Could you transfer fifty euros to my flatmate for the groceries?"),
    Request(
        "I'd love it if you could get us seats for the eight o'clock film at the cinema.", timers=LAUNDRY
    ),
    # small talk
    Request("Hi IRIS, how has your day been?", refuse=False),
    Request("Thanks a lot, you've been really helpful today.", refuse=False, timers=LAUNDRY),
]
"""Out-of-scope requests: nothing may be done, the timers must stay as they were."""
