"""The held-out half of the must-serve set: never used for tuning.

Written apart from the development half (``serve_dev``), without reading it or the
conversation rules being tuned, from other topics and sentence shapes: a family kitchen,
a student revising, an elderly user, a gamer, someone cooking or commuting. Its figure is
the one that counts; a change tuned on the development half must hold here too.
"""

from __future__ import annotations

from tools.bench.tool_questions.serve import Chat, Say

SET, LIST, CANCEL, ADJUST = "set_timer", "list_timers", "cancel_timer", "adjust_timer"
PAUSE, RESUME, REMIND = "pause_timer", "resume_timer", "set_reminder"

CHATS: list[Chat] = [
    # how-to
    Chat("how-to", (Say("How do I get a red wine stain out of a carpet?"),)),
    Chat("how-to", (Say("Could you walk me through making the text bigger on my phone?"),)),
    Chat("how-to", (Say("I can never remember how to fold a fitted sheet."),)),
    Chat(
        "how-to",
        (
            Say("How long should I boil an egg if I want a runny yolk?"),
            Say("And how do I stop the shell sticking when I peel it?"),
        ),
    ),
    Chat("how-to", (Say("What's the best way to start revising for a history exam?"),)),
    # opinion
    Chat("opinion", (Say("Do you reckon pineapple belongs on pizza?"),)),
    Chat("opinion", (Say("Which is better for a ten-year-old, Minecraft or Fortnite?"),)),
    Chat("opinion", (Say("Is it worth cycling to work instead of taking the bus?"),)),
    Chat("opinion", (Say("Cats or dogs, which would you pick?"),)),
    # role-play
    Chat(
        "role-play",
        (Say("Pretend you're a football commentator and describe me putting the kettle on."),),
    ),
    Chat(
        "role-play",
        (
            Say("Let's pretend you're a robot from the future. Say hello to my grandson."),
            Say("Now tell him what robots eat for breakfast."),
        ),
    ),
    Chat("role-play", (Say("Talk like a pirate for a bit. How's your day going?"),)),
    Chat("role-play", (Say("Could you be a grumpy old wizard and tell me to do my homework?"),)),
    # game
    Chat("game", (Say("I fancy a riddle."), Say("Hmm, I give up. What's the answer?"))),
    Chat(
        "game",
        (
            Say(
                "Let's play rhymes: I say a word and you say one that rhymes with it. Moon.",
                says=("soon|june|spoon|tune|noon|balloon|dune|croon|raccoon|baboon|lagoon|cartoon|maroon",),
            ),
            Say(
                "Cake.",
                says=("lake|bake|make|take|snake|wake|shake|rake|fake|flake|brake|break|steak|stake|quake",),
            ),
        ),
    ),
    Chat(
        "game",
        (
            Say("Ask me a trivia question about space."),
            Say("Is it Jupiter?"),
        ),
    ),
    Chat(
        "game",
        (
            Say("Think of a number between one and ten and I'll try to guess it."),
            Say("Is it seven?"),
            Say("Okay, is it three?"),
        ),
    ),
    Chat(
        "game",
        (
            Say("I'm thinking of an animal. Guess it by asking me yes or no questions."),
            Say("Yes, it has four legs."),
        ),
    ),
    # translation
    Chat("translation", (Say("How do you say thank you in Japanese?", says=("arigat|ありがとう",)),)),
    Chat("translation", (Say("What's good morning in French?", says=("bonjour",)),)),
    Chat("translation", (Say("How would I ask for the bill in Italian?", says=("conto",)),)),
    Chat("translation", (Say("How do you say happy birthday in Spanish?", says=("feliz",)),)),
    Chat("translation", (Say("What's the German word for apple?", says=("apfel",)),)),
    Chat("translation", (Say("Translate I love you into Portuguese.", says=("te amo|amo-te",)),)),
    # story
    Chat("story", (Say("Write me a short poem about autumn leaves."),)),
    Chat(
        "story",
        (Say("Tell my daughter a bedtime story about a brave little hedgehog.", says=("hedgehog",)),),
    ),
    Chat("story", (Say("Could you make up a limerick about a cat who loves cheese?"),)),
    Chat("story", (Say("I'd like a two-line poem about Monday mornings."),)),
    # preference and names
    Chat(
        "preference",
        (Say("My name is Margaret, by the way."), Say("What's my name?", says=("margaret",))),
    ),
    Chat(
        "preference",
        (
            Say("From now on, please call me Captain Jo."),
            Say("Tell me a quick joke."),
            Say("What do you call me?", says=("jo",)),
        ),
    ),
    Chat(
        "preference",
        (
            Say("My favourite colour is teal."),
            Say("Which colour do I like best?", says=("teal",)),
        ),
    ),
    Chat(
        "preference",
        (
            Say("Just so you know, I'm allergic to peanuts."),
            Say("What's a good snack for the train?"),
            Say("Remind me, what am I allergic to?", says=("peanut",)),
        ),
    ),
    Chat(
        "preference",
        (Say("I'm Arjun and I support Everton."), Say("Which team do I support?", says=("everton",))),
    ),
    # fact
    Chat("fact", (Say("Which is closer to the sun, Venus or Mars?", says=("venus",)),)),
    Chat("fact", (Say("What's the boiling point of water in Fahrenheit?", says=("212",)),)),
    Chat("fact", (Say("Can I take a train from London to Paris?", says=("eurostar|channel tunnel",)),)),
    Chat("fact", (Say("When did the Berlin Wall come down?", says=("1989",)),)),
    Chat("fact", (Say("Which ocean lies between Africa and Australia?", says=("indian",)),)),
    Chat("fact", (Say("What gas do plants take in from the air?", says=("carbon dioxide|co2",)),)),
    # follow-up-timer
    Chat(
        "follow-up-timer",
        (
            Say("How long is left on the pizza?", tools=(LIST,), says=("minute",), after=(("pizza", 900),)),
            Say("Pause it for a moment.", tools=(PAUSE,), after=(("pizza", 900),)),
            Say("Okay, start it again.", tools=(RESUME,), after=(("pizza", 900),)),
        ),
        timers=(("pizza", 900),),
    ),
    Chat(
        "follow-up-timer",
        (
            Say("Set a timer for five minutes.", tools=(SET,), after=(("", 300),)),
            Say("Make it eight minutes.", tools=(ADJUST,), after=(("", 480),)),
            Say("Actually, cancel it.", tools=(CANCEL,), after=()),
        ),
    ),
    Chat(
        "follow-up-timer",
        (
            Say(
                "Start a four-minute timer for the eggs.", tools=(SET,), after=(("rice", 1200), ("eggs", 240))
            ),
            Say("Add a minute to it.", tools=(ADJUST,), after=(("rice", 1200), ("eggs", 300))),
        ),
        timers=(("rice", 1200),),
    ),
    Chat(
        "follow-up-timer",
        (
            Say(
                "How much time is left on the bread?",
                tools=(LIST,),
                says=("minute",),
                after=(("laundry", 1800), ("bread", 2400)),
            ),
            Say(
                "Take five minutes off that one.", tools=(ADJUST,), after=(("laundry", 1800), ("bread", 2100))
            ),
        ),
        timers=(("laundry", 1800), ("bread", 2400)),
    ),
    Chat(
        "follow-up-timer",
        (
            Say("Is my homework timer still running?", tools=(LIST,), after=(("homework", 2700),)),
            Say("Give it another ten minutes.", tools=(ADJUST,), after=(("homework", 3300),)),
        ),
        timers=(("homework", 2700),),
    ),
    Chat(
        "follow-up-timer",
        (
            Say(
                "Set a ten-minute timer for the garlic bread.",
                tools=(SET,),
                after=(("soup", 1500), ("garlic bread", 600)),
            ),
            Say("No wait, cancel that one.", tools=(CANCEL,), after=(("soup", 1500),)),
        ),
        timers=(("soup", 1500),),
    ),
    Chat(
        "follow-up-timer",
        (
            Say(
                "Twelve minutes on a timer for the cookies, please.", tools=(SET,), after=(("cookies", 720),)
            ),
            Say("Pause it, someone's at the door.", tools=(PAUSE,), after=(("cookies", 720),)),
            Say("Right, carry on with it.", tools=(RESUME,), after=(("cookies", 720),)),
        ),
    ),
    # follow-up-topic
    Chat(
        "follow-up-topic",
        (
            Say("What's the capital of Canada?", says=("ottawa",)),
            Say("And what about Australia?", says=("canberra",)),
        ),
    ),
    Chat(
        "follow-up-topic",
        (
            Say("Who painted the Mona Lisa?", says=("leonardo|da vinci",)),
            Say("When did he die?", says=("1519",)),
        ),
    ),
    Chat(
        "follow-up-topic",
        (
            Say("Who invented the telephone?", says=("bell",)),
            Say("Where was he born?", says=("scotland|edinburgh",)),
        ),
    ),
    Chat(
        "follow-up-topic",
        (
            Say("What's the biggest planet in the solar system?", says=("jupiter",)),
            Say("And the smallest one?", says=("mercury",)),
        ),
    ),
    Chat(
        "follow-up-topic",
        (
            Say("Who was the first person to walk on the moon?", says=("armstrong",)),
            Say("What year did he do it?", says=("1969",)),
        ),
    ),
    # time-words
    Chat(
        "time-words",
        (Say("Set a timer for an hour and a half for the roast.", tools=(SET,), after=(("roast", 5400),)),),
    ),
    Chat(
        "time-words",
        (Say("Remind me to call grandma at half past six.", tools=(REMIND,), after=(("call grandma", 0),)),),
    ),
    Chat(
        "time-words",
        (
            Say(
                "At quarter to eight, remind me to put the bins out.",
                tools=(REMIND,),
                after=(("put the bins out", 0),),
            ),
        ),
    ),
    Chat("time-words", (Say("Timer for ninety seconds, please.", tools=(SET,), after=(("", 90),)),)),
    Chat(
        "time-words",
        (Say("Give me a couple of minutes on a tea timer.", tools=(SET,), after=(("tea", 120),)),),
    ),
    Chat(
        "time-words",
        (Say("Remind me to water the plants at noon.", tools=(REMIND,), after=(("water the plants", 0),)),),
    ),
    Chat(
        "time-words",
        (
            Say(
                "I'd like a reminder at midnight to wish Tom happy birthday.",
                tools=(REMIND,),
                after=(("wish Tom happy birthday", 0),),
            ),
        ),
    ),
    Chat(
        "time-words",
        (
            Say(
                "Remind me tomorrow morning at eight to feed the cat.",
                tools=(REMIND,),
                after=(("feed the cat", 0),),
            ),
        ),
    ),
    Chat(
        "time-words",
        (
            Say(
                "In twenty minutes, remind me to take the washing out.",
                tools=(REMIND,),
                after=(("take the washing out", 1200),),
            ),
        ),
    ),
    Chat(
        "time-words",
        (
            Say(
                "Let's put a quarter of an hour on the potatoes.",
                tools=(SET,),
                after=(("potatoes", 900),),
            ),
        ),
    ),
]
