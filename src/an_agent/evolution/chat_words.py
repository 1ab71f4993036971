"""Chat and field abbreviations and hedges: the one lexicon that key names and phrasings read words through.

Field technicians, drivers and NOC people write short: "3 ppl", "2 techs", "ant hght 32m", "batt 40%",
"high prio", "pwr cut", "conn LC". A key named from their phrases took the abbreviation itself (the SMS
corpus's crew count was `ppl`), and the same idea written in full by one sender and clipped by another
("battery" / "batt") counted as two words. `full_word` gives the word an abbreviation stands for; naming
(`phrases.candidate_phrases`, `value_words.name_tokens`) reads every word through it, so a key is named,
and its other phrasings listed, in full words (`battery_charge`, not `batt_charge`).

**Hedges** ("abt", "approx", "ca", "~": about, approximately) say that a value is not exact: they are no
part of what is measured, and name nothing ("attenuation abt 1.1 dB/km" named `attenuation_abt_db`).
Written in full (`full_word`: "abt" -> about, "approx" -> approximately, "ca" -> circa) they are
`HEDGES`, and a phrase never holds one.

Only abbreviations with one reading in operations text are listed: "tech" (technician or technology:
"tech 4G", `codes.frame_word` reads it by the full word a cluster uses), "attn" (attenuation, or the
"attention" of a letter), "gen" (generator or generation), "ant" (antenna or the insect) are not. The
lexicon is data, not a rule: a word missing from it stays as written, as before.
"""

from __future__ import annotations

# Abbreviation -> the word it stands for, in the number it is written in ("techs" -> technicians).
ABBREVIATIONS: dict[str, str] = {
    # people and teams
    "ppl": "people",
    "pple": "people",
    "persons": "people",
    "guys": "people",  # "4 guys in the team": a count of people, the way chat says it
    "techs": "technicians",
    "technicans": "technicians",
    "mgmt": "management",
    "mgr": "manager",
    "dept": "department",
    "cust": "customer",
    "custs": "customers",
    # things and quantities in the field
    "hght": "height",
    "hgt": "height",
    "batt": "battery",
    "batts": "batteries",
    "prio": "priority",
    "pwr": "power",
    "nbr": "number",
    "num": "number",
    "qty": "quantity",
    "amt": "amount",
    "lvl": "level",
    "temp": "temperature",
    "temps": "temperatures",
    "conn": "connector",
    "conns": "connectors",
    "connecter": "connector",  # an autocorrect slip as common as the word
    "connecters": "connectors",
    "freq": "frequency",
    "equip": "equipment",
    "maint": "maintenance",
    "svc": "service",
    "msg": "message",
    "msgs": "messages",
    "addr": "address",
    "avail": "available",
    "sig": "signal",
    "atten": "attenuation",
    # time
    "tmrw": "tomorrow",
    "tmw": "tomorrow",
    "2moro": "tomorrow",
    "2morrow": "tomorrow",
    "tonite": "tonight",
    "2nite": "tonight",
    "b4": "before",
    # hedges, written in full (`HEDGES`)
    "abt": "about",
    "approx": "approximately",
    "apprx": "approximately",
    "appr": "approximately",
    "ca": "circa",
    # function words of chat (stop words once written in full)
    "u": "you",
    "r": "are",
    "ur": "your",
    "pls": "please",
    "plz": "please",
    "thx": "thanks",
    "w": "with",
    "wo": "without",
}

# Words that say a value is approximate ("abt 20 mins", "approx 18 m", "ca. 3 km", "~28m"): they name nothing.
HEDGES = frozenset({"about", "approximately", "circa", "roughly", "around", "nearly", "almost", "~"})


def full_word(word: str) -> str:
    """The word ``word`` (lower case) stands for: its `ABBREVIATIONS` entry, else itself."""
    return ABBREVIATIONS.get(word, word)
