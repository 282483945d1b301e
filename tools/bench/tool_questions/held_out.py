"""The held-out half: written before tuning, never tuned on (see the package notes)."""

from __future__ import annotations

from tools.bench.tool_questions import (
    CALC_ANY,
    GIT,
    LIST_DIR,
    MCP_CONVERT,
    MEM_RECALL,
    MEM_SAVE,
    READ_FILE,
    SQL_READ,
    SQL_TABLES,
    SQL_WRITE,
    TIME_ANY,
    Question,
    Request,
    conversion,
)

PASTA = (("pasta", 480),)
TWO = (("pasta", 480), ("tea", 180))

QUESTIONS = [
    # built-in tools
    Question("What time is it in Sydney right now?", TIME_ANY, ("sydney",)),
    Question("Could you tell me the time in Chicago?", TIME_ANY, ("chicago",)),
    Question("What's 18 percent of 250?", CALC_ANY, ("18", "250")),
    Question("How much is 7 times 86?", CALC_ANY, ("7", "86")),
    Question("Please set a timer for twelve minutes for the eggs.", ("set_timer",), ("12|twelve", "egg")),
    Question("Put a 45 second timer on.", ("set_timer",), ("45",)),
    Question("What timers have I got going?", ("list_timers",), (), PASTA),
    Question("Get rid of the tea timer.", ("cancel_timer",), ("tea",), TWO),
    Question("Give the pasta timer two more minutes.", ("adjust_timer",), ("2|two",), PASTA),
    Question("Remind me to water the plants at 6 pm.", ("set_reminder",), ("6", "plant")),
    # time server: converting between zones
    Question(
        "When it is 9:00 in London, what time is it in Tokyo?",
        (MCP_CONVERT,),
        conversion("europe/london", "asia/tokyo"),
    ),
    Question(
        "Convert 14:30 Berlin time to New York time.",
        (MCP_CONVERT,),
        conversion("europe/berlin", "america/new_york"),
    ),
    # sqlite: the shop database
    Question("Which tables does the shop database have?", (SQL_TABLES, SQL_READ), ()),
    Question("How much does tea cost in the shop database?", (SQL_READ,), ("tea",)),
    Question("How many bananas are in stock according to the shop database?", (SQL_READ,), ("banana",)),
    Question("Which customers in the shop database live in Berlin?", (SQL_READ,), ("berlin",)),
    Question("Add a product called honey priced 6.5 to the shop database.", (SQL_WRITE,), ("honey",)),
    # git: the garden planner repository
    Question("What is the status of the garden planner git repository?", (f"{GIT}git_status",), ("repo",)),
    Question("Show me the commit history of the garden planner repo.", (f"{GIT}git_log",), ("repo",)),
    Question(
        "What changes in the garden planner repository are not staged yet?",
        (f"{GIT}git_diff_unstaged", f"{GIT}git_status"),
        ("repo",),
    ),
    Question("List the branches of the garden planner repository.", (f"{GIT}git_branch",), ("repo",)),
    # memory: remembering facts
    Question("Remember that my brother Tom is allergic to peanuts.", MEM_SAVE, ("tom", "peanut")),
    Question("Please remember that Alice's favourite colour is green.", MEM_SAVE, ("alice", "green")),
    Question("What do you remember about Bob?", MEM_RECALL, ("bob|read_graph",)),
    Question("Search your memory for anything about coffee.", MEM_RECALL, ("coffee|read_graph",)),
    # files: the notes folder
    Question("Read me the shopping list from my notes folder.", READ_FILE, ("shopping",)),
    Question("Which files are in my notes folder?", LIST_DIR, ("notes",)),
    Question("Open ideas.md in my notes and read it to me.", READ_FILE, ("ideas",)),
    # no tool needed
    Question("Who painted the Mona Lisa?", ()),
    Question("How many legs does a spider have?", ()),
    Question("Tell me a short joke about penguins.", ()),
    Question("What's the opposite of ancient?", ()),
    Question("Good morning, IRIS!", ()),
    Question("Why is the sky blue? One sentence please.", ()),
]

REQUESTS = [
    Request("Turn on the lamp.", timers=PASTA),
    Request("Turn off the lights in the dining room.", timers=PASTA),
    Request("Play some jazz music.", timers=PASTA),
    Request("What's the weather like tomorrow?"),
    Request("Can I have a medium double shot Americano?", timers=PASTA),
    Request("Call my sister.", timers=PASTA),
    Request("Open the garage door.", timers=PASTA),
    Request("Lock the front door.", timers=PASTA),
    Request("Hello there!", refuse=False),
    Request("This is a test.", refuse=False),
    Request("Send an email to my boss saying I'm late.", timers=PASTA),
    Request("Turn the heating up to 22 degrees.", timers=PASTA),
]
