"""The must-serve development half: tune prompts and routing on these only, never on ``serve_held_out``.

Spoken, short requests across every kind in ``KINDS``: kitchen and household how-tos,
everyday opinions, small role-plays and games, phrasebook translations, tiny stories,
names and units the user asks for, facts a model knows without a tool, and timers and
reminders followed up or said with spoken times ("a minute and a half", "half past six").
``says`` holds only what any right answer must say; ``after`` every timer and reminder
that must be running once the turn is done (a reminder at a clock time: seconds 0).
"""

from __future__ import annotations

from tools.bench.tool_questions.serve import Chat, Say

CHATS: list[Chat] = [
    # how-to: household and kitchen, answered in words (no timer for the egg question)
    Chat(
        kind="how-to",
        turns=(Say("How do I get candle wax off a tablecloth?"),),
    ),
    Chat(
        kind="how-to",
        turns=(Say("How many minutes do I boil an egg if I want the yolk runny?", says=("minute",)),),
    ),
    Chat(
        kind="how-to",
        turns=(
            Say("What's the easiest way to peel a bunch of garlic?"),
            Say("Okay, and how do I get the smell off my hands after?"),
        ),
    ),
    Chat(
        kind="how-to",
        turns=(
            Say("My bathroom sink is draining really slow. How do I fix that without calling a plumber?"),
        ),
    ),
    # opinion: everyday choices, an answer rather than a refusal
    Chat(
        kind="opinion",
        turns=(Say("Should I learn Spanish or French first?"),),
    ),
    Chat(
        kind="opinion",
        turns=(Say("Is it better to go running in the morning or in the evening?"),),
    ),
    Chat(
        kind="opinion",
        turns=(
            Say("Cats or dogs, which one do you like more?"),
            Say("Okay but if you had to pick one?"),
        ),
    ),
    Chat(
        kind="opinion",
        turns=(Say("What's a good first board game for a family with little kids?"),),
    ),
    # role-play: a voice or character for a line or two
    Chat(
        kind="role-play",
        turns=(Say("Talk like a cowboy and wish me luck on my exam tomorrow.", says=("luck",)),),
    ),
    Chat(
        kind="role-play",
        turns=(Say("Pretend you're a robot butler and tell me dinner is served.", says=("dinner",)),),
    ),
    Chat(
        kind="role-play",
        turns=(
            Say("Let's pretend you're a shopkeeper at a medieval market."),
            Say("How much for a loaf of bread?"),
            Say("That's way too much. I'll give you two coppers."),
        ),
    ),
    Chat(
        kind="role-play",
        turns=(Say("Be a sports commentator for a second. I'm making a sandwich."),),
    ),
    # game: riddles, rhymes, guessing games
    Chat(
        kind="game",
        turns=(
            Say("Give me a riddle."),
            Say("Hmm, is it a shadow?"),
        ),
    ),
    Chat(
        kind="game",
        turns=(Say("What has keys but can't open any locks?", says=("piano|keyboard",)),),
    ),
    Chat(
        kind="game",
        turns=(
            Say("Let's play twenty questions. You think of an animal and I'll guess."),
            Say("Does it live in the water?"),
            Say("Is it bigger than a person?"),
        ),
    ),
    Chat(
        kind="game",
        turns=(Say("Quick, give me a word that rhymes with orange."),),
    ),
    Chat(
        kind="game",
        turns=(
            Say("Let's play word association. I'll go first: ocean."),
            Say("Sand."),
        ),
    ),
    # translation: the phrase itself must be in the answer
    Chat(
        kind="translation",
        turns=(Say("How do you say good night in Spanish?", says=("buenas noches",)),),
    ),
    Chat(
        kind="translation",
        turns=(Say("What's cheers in German?", says=("prost",)),),
    ),
    Chat(
        kind="translation",
        turns=(
            Say("How do you say hello in Italian?", says=("ciao|buongiorno|salve",)),
            Say("And goodbye?", says=("arrivederci|ciao",)),
        ),
    ),
    Chat(
        kind="translation",
        turns=(Say("What does danke schoen mean?", says=("thank",)),),
    ),
    Chat(
        kind="translation",
        turns=(Say("How would I ask where the train station is in French?", says=("gare",)),),
    ),
    # story: short, made up on the spot
    Chat(
        kind="story",
        turns=(
            Say("Tell me a really short story about a dragon who's scared of the dark.", says=("dragon",)),
        ),
    ),
    Chat(
        kind="story",
        turns=(Say("Can you make up a quick bedtime story about a sleepy owl?", says=("owl",)),),
    ),
    Chat(
        kind="story",
        turns=(
            Say("Tell me a short story about a robot who wants to learn to paint.", says=("robot",)),
            Say("What happens next?"),
        ),
    ),
    Chat(
        kind="story",
        turns=(Say("Give me a two sentence story about a lost sock."),),
    ),
    # preference and names: said once, kept for the rest of the chat
    Chat(
        kind="preference",
        turns=(
            Say("Hey, call me Priya from now on."),
            Say("What's my name?", says=("priya",)),
        ),
    ),
    Chat(
        kind="preference",
        turns=(
            Say("My name's Jordan, by the way."),
            Say("Give me a quick pep talk."),
            Say("Do you remember what I'm called?", says=("jordan",)),
        ),
    ),
    Chat(
        kind="preference",
        turns=(
            Say("I like temperatures in Celsius, please."),
            Say("What temperature does water boil at?", says=("100",)),
        ),
    ),
    Chat(
        kind="preference",
        turns=(
            Say("I prefer kilometers over miles."),
            Say("How long is a marathon?", says=("42",)),
        ),
    ),
    # fact: known without a tool (geography, routes, history, nature)
    Chat(
        kind="fact",
        turns=(Say("What's the capital of Australia?", says=("canberra",)),),
    ),
    Chat(
        kind="fact",
        turns=(Say("If I drive from Chicago to Denver, do I go through Nebraska?", says=("nebraska",)),),
    ),
    Chat(
        kind="fact",
        turns=(Say("Which is closer to London, Paris or Rome?", says=("paris",)),),
    ),
    Chat(
        kind="fact",
        turns=(Say("What year did people first walk on the moon?", says=("1969",)),),
    ),
    Chat(
        kind="fact",
        turns=(Say("How many legs does a spider have?", says=("eight|8",)),),
    ),
    Chat(
        kind="fact",
        turns=(Say("What time zone is Chicago in?", says=("central",)),),
    ),
    # follow-up-timer: "it", "that", "the first one" refer to a timer already running
    Chat(
        kind="follow-up-timer",
        timers=(("eggs", 420),),
        turns=(
            Say("How long is left on it?", tools=("list_timers",), says=("minute",), after=(("eggs", 420),)),
            Say("Okay, add two more minutes.", tools=("adjust_timer",), after=(("eggs", 540),)),
        ),
    ),
    Chat(
        kind="follow-up-timer",
        turns=(
            Say("Set a timer for ten minutes for the pizza.", tools=("set_timer",), after=(("pizza", 600),)),
            Say("Actually make it fifteen minutes.", tools=("adjust_timer",), after=(("pizza", 900),)),
            Say("Never mind, cancel it.", tools=("cancel_timer",), after=()),
        ),
    ),
    Chat(
        kind="follow-up-timer",
        timers=(("laundry", 2700), ("bread", 1500)),
        turns=(
            Say(
                "Pause the bread one.",
                tools=("pause_timer",),
                args=("bread",),
                after=(("laundry", 2700), ("bread", 1500)),
            ),
            Say(
                "Okay, start it again.",
                tools=("resume_timer",),
                after=(("laundry", 2700), ("bread", 1500)),
            ),
        ),
    ),
    Chat(
        kind="follow-up-timer",
        timers=(("pasta", 600), ("sauce", 1200)),
        turns=(
            Say("Stop the first one.", tools=("cancel_timer",), after=(("sauce", 1200),)),
            Say("How much time is on the other one?", tools=("list_timers",), after=(("sauce", 1200),)),
        ),
    ),
    Chat(
        kind="follow-up-timer",
        turns=(
            Say("Set a ten minute timer.", tools=("set_timer",), after=(("", 600),)),
            Say(
                "And another one for twenty-five minutes for the roast.",
                tools=("set_timer",),
                after=(("", 600), ("roast", 1500)),
            ),
            Say(
                "Take three minutes off the first one.",
                tools=("adjust_timer",),
                after=(("", 420), ("roast", 1500)),
            ),
            Say("Okay, cancel them all.", tools=("cancel_timer",), after=()),
        ),
    ),
    Chat(
        kind="follow-up-timer",
        timers=(("cookies", 600),),
        turns=(
            Say("Pause that.", tools=("pause_timer",), after=(("cookies", 600),)),
            Say("Take three minutes off it.", tools=("adjust_timer",), after=(("cookies", 420),)),
            Say("Alright, resume it.", tools=("resume_timer",), after=(("cookies", 420),)),
        ),
    ),
    Chat(
        kind="follow-up-timer",
        timers=(("rice", 900),),
        turns=(Say("Hmm, make it ten minutes instead.", tools=("adjust_timer",), after=(("rice", 600),)),),
    ),
    # follow-up-topic: "she", "it", "that" refer to the turn before
    Chat(
        kind="follow-up-topic",
        turns=(
            Say("Who painted The Starry Night?", says=("gogh",)),
            Say("What country was he from?", says=("dutch|netherlands|holland",)),
        ),
    ),
    Chat(
        kind="follow-up-topic",
        turns=(
            Say("What's the biggest planet?", says=("jupiter",)),
            Say("What's it mostly made of?", says=("hydrogen",)),
        ),
    ),
    Chat(
        kind="follow-up-topic",
        turns=(
            Say("What's the longest river in South America?", says=("amazon",)),
            Say("Which countries does it go through?", says=("brazil",)),
            Say("And where does it end up?", says=("atlantic",)),
        ),
    ),
    Chat(
        kind="follow-up-topic",
        turns=(
            Say("Who discovered penicillin?", says=("fleming",)),
            Say("What year was that?", says=("1928",)),
        ),
    ),
    Chat(
        kind="follow-up-topic",
        turns=(
            Say("What time is it in Tokyo?", tools=("get_current_time",), args=("tokyo",)),
            Say("And in London?", tools=("get_current_time",), args=("london",)),
        ),
    ),
    Chat(
        kind="follow-up-topic",
        turns=(
            Say("What's fifteen percent of eighty?", tools=("calculator",), says=("12",)),
            Say("And twenty percent?", tools=("calculator",), says=("16",)),
        ),
    ),
    # time-words: durations and clock times as people say them
    Chat(
        kind="time-words",
        turns=(Say("Set a timer for a minute and a half.", tools=("set_timer",), after=(("", 90),)),),
    ),
    Chat(
        kind="time-words",
        turns=(
            Say("Can you set a timer for an hour and a half?", tools=("set_timer",), after=(("", 5400),)),
        ),
    ),
    Chat(
        kind="time-words",
        turns=(Say("Yo, timer for like half an hour.", tools=("set_timer",), after=(("", 1800),)),),
    ),
    Chat(
        kind="time-words",
        turns=(
            Say(
                "Set a laundry timer for three quarters of an hour.",
                tools=("set_timer",),
                after=(("laundry", 2700),),
            ),
        ),
    ),
    Chat(
        kind="time-words",
        turns=(
            Say("Give me two and a half minutes for the tea.", tools=("set_timer",), after=(("tea", 150),)),
        ),
    ),
    Chat(
        kind="time-words",
        turns=(
            Say(
                "Remind me at noon to call the dentist.",
                tools=("set_reminder",),
                args=("12|noon",),
                after=(("call the dentist", 0),),
            ),
        ),
    ),
    Chat(
        kind="time-words",
        turns=(
            Say(
                "Remind me tomorrow morning to take out the recycling.",
                tools=("set_reminder",),
                args=("tomorrow",),
                after=(("take out the recycling", 0),),
            ),
        ),
    ),
    Chat(
        kind="time-words",
        turns=(
            Say(
                "Remind me at half past six to start dinner.",
                tools=("set_reminder",),
                args=("6:30|18:30|half past six|6.30",),
                after=(("start dinner", 0),),
            ),
        ),
    ),
    Chat(
        kind="time-words",
        turns=(
            Say(
                "Remind me at quarter to five to pick up the kids.",
                tools=("set_reminder",),
                args=("4:45|16:45|quarter to five|4.45",),
                after=(("pick up the kids", 0),),
            ),
        ),
    ),
    Chat(
        kind="time-words",
        turns=(
            Say(
                "Remind me in forty-five minutes to move the car.",
                tools=("set_reminder",),
                args=("45|forty-five|forty five",),
                after=(("move the car", 2700),),
            ),
        ),
    ),
]
