"""The development half: tune retrieval, descriptions and prompts on these only."""

from __future__ import annotations

from tools.bench.tool_questions import (
    CALC_ANY,
    GIT,
    LIST_DIR,
    MCP_CONVERT,
    MEM_RECALL,
    MEM_SAVE,
    READ_FILE,
    SQL_DESCRIBE,
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
    Question("What time is it in Paris?", TIME_ANY, ("paris",)),
    Question("Tell me the current time in Mumbai.", TIME_ANY, ("mumbai|kolkata",)),
    Question("What is 23 times 47?", CALC_ANY, ("23", "47")),
    Question("What's the square root of 1764?", CALC_ANY, ("1764",)),
    Question("Set a tea timer for 3 minutes.", ("set_timer",), ("3|three", "tea")),
    Question("Start a timer for one hour.", ("set_timer",), ("1|one",)),
    Question("How long is left on the pasta timer?", ("list_timers",), (), PASTA),
    Question("Cancel the pasta timer.", ("cancel_timer",), ("pasta",), TWO),
    Question("Pause the pasta timer.", ("pause_timer",), (), PASTA),
    Question("Remind me to call mom in 2 hours.", ("set_reminder",), ("2", "mom")),
    # time server: converting between zones
    Question(
        "If it's 8 am in New York, what time is it in Paris?",
        (MCP_CONVERT,),
        conversion("america/new_york", "europe/paris"),
    ),
    Question(
        "Convert 17:00 Tokyo time to London time.", (MCP_CONVERT,), conversion("asia/tokyo", "europe/london")
    ),
    # sqlite: the shop database
    Question("What products are in the shop database?", (SQL_READ,), ("product",)),
    Question("What is the price of coffee in the shop database?", (SQL_READ,), ("coffee",)),
    Question("How many customers are in the shop database?", (SQL_READ,), ("customer",)),
    Question("Describe the products table of the shop database.", (SQL_DESCRIBE, SQL_READ), ("product",)),
    Question("List the tables in the shop database.", (SQL_TABLES, SQL_READ), ()),
    Question("Set the stock of apples to 100 in the shop database.", (SQL_WRITE,), ("apple", "100")),
    # git: the garden planner repository
    Question("What's the git status of the garden planner repository?", (f"{GIT}git_status",), ("repo",)),
    Question("Show the last commits of the garden planner repository.", (f"{GIT}git_log",), ("repo",)),
    Question("Which branches does the garden planner repo have?", (f"{GIT}git_branch",), ("repo",)),
    # memory: remembering facts
    Question("Remember that my sister Anna's birthday is on May 3rd.", MEM_SAVE, ("anna", "may")),
    Question("Remember that Bob likes chess.", MEM_SAVE, ("bob", "chess")),
    Question("What do you remember about Alice?", MEM_RECALL, ("alice|read_graph",)),
    Question("Recall what you know about my sister Anna.", MEM_RECALL, ("anna|read_graph",)),
    # files: the notes folder
    Question("What's on my shopping list in the notes folder?", READ_FILE, ("shopping",)),
    Question("List the files in my notes folder.", LIST_DIR, ("notes",)),
    Question("Read the ideas file from my notes.", READ_FILE, ("ideas",)),
    # no tool needed
    Question("What is the capital of Australia?", ()),
    Question("Tell me a fun fact about octopuses.", ()),
    Question("Who wrote Pride and Prejudice?", ()),
    Question("Give me a synonym for happy.", ()),
    Question("Thanks, that's all for now.", ()),
    Question("How do you say thank you in Spanish?", ()),
]

REQUESTS = [
    Request("Turn on the living room lamp.", timers=PASTA),
    Request("Hi ESP, turn off dining room.", timers=PASTA),
    Request("Play my workout playlist on Spotify.", timers=PASTA),
    Request("Will it rain today?"),
    Request("Make me a cup of coffee.", timers=PASTA),
    Request("Call mom.", timers=PASTA),
    Request("Close the garage door.", timers=PASTA),
    Request("Unlock the back door.", timers=PASTA),
    Request("Good evening!", refuse=False),
    Request("Testing, one two three.", refuse=False),
    Request("Order a pizza for dinner.", timers=PASTA),
    Request("Set the thermostat to 20 degrees.", timers=PASTA),
]
