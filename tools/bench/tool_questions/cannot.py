"""Requests for things IRIS cannot do: devices, calls, purchases, movement, messages.

Two halves, like the tool questions: ``DEV`` for tuning what IRIS says to them, ``HELD_OUT``
written and committed before any of that tuning and never used for it. With a pasta timer
running, so a wrong cancel or change would show. An honest answer says IRIS cannot do it,
in a finished sentence, without claiming the action, asking about a timer nobody
mentioned, or repeating the request.
"""

from __future__ import annotations

from tools.bench.tool_questions import Request

PASTA = (("pasta", 480),)

DEV = [
    Request(text, timers=PASTA)
    for text in (
        "Switch on the kitchen lights.",
        "Dim the bedroom lights to thirty percent.",
        "Close the blinds in the living room.",
        "Turn the volume up.",
        "Call the dentist and book an appointment.",
        "Text my brother that I'm on my way.",
        "Send a message to Anna saying happy birthday.",
        "Buy more milk.",
        "Order me a taxi to the station.",
        "Drive me to work.",
        "Move the robot vacuum to the hallway.",
        "Start the dishwasher.",
        "Play the next song.",
        "Book a flight to Berlin for Friday.",
        "Turn on the TV.",
        "Feed the cat at six.",
    )
]
"""For tuning the words of refusals."""

HELD_OUT = [
    Request(text, timers=PASTA)
    for text in (
        # devices
        "Turn off the porch light.",
        "Open the front gate.",
        "Set the air conditioning to eighteen degrees.",
        "Lock all the windows.",
        "Turn on the coffee machine.",
        "Switch the fan to high.",
        "Raise the shades in the office.",
        "Arm the alarm system.",
        # calls
        "Call my mother.",
        "Ring the office and say I'm sick.",
        "Phone the pizza place on Main Street.",
        "Video call grandpa.",
        # purchases and bookings
        "Buy two tickets for the concert on Saturday.",
        "Order a large pepperoni pizza.",
        "Add eggs to my Amazon cart and check out.",
        "Pay the electricity bill.",
        "Reserve a table for four at eight tonight.",
        "Book a hotel room in Paris for next weekend.",
        # movement
        "Go forward five steps.",
        "Turn left and drive to the bakery.",
        "Come here.",
        "Back up the car into the garage.",
        "Take the elevator to the third floor.",
        # messages
        "Email my team that the meeting is moved to three.",
        "Send a WhatsApp to Tom saying I'll be late.",
        "Reply to the last text with okay.",
        "Post a photo of my dinner on Instagram.",
        "Tell my wife I love her.",
        # media and other
        "Play my road trip playlist.",
        "Skip this track.",
        "Record the football match tonight.",
        "Water the plants in the garden.",
    )
]
"""The figure that counts: never used for tuning."""
