"""The sheets kind of bench/suite.py: a personal folder written from fixed rules (seeded), and its questions.

A sales workbook (.xlsx), an inventory and a contacts sheet (.csv), a budget workbook with the same
columns as the sales one, meeting notes that name a contact, and 150 HotpotQA paragraphs as unrelated
notes. Questions: a row by its values, a row by a column name and a value, and a hop from a note to the
contacts sheet. The folder and its questions must stay as they are for a given ``SHEETS_VERSION``.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

REGIONS = ("North", "South", "East", "West", "Central")
PRODUCTS = ("Widgets", "Gaskets", "Valves")
FIRST = ("Dana", "Marcus", "Priya", "Tomasz", "Elena", "Kwame", "Hiroshi", "Sofia", "Liam", "Aisha", "Mateo", "Ingrid",
         "Rahul", "Chloe", "Oskar", "Yara", "Felix", "Nadia", "Victor", "Greta")
LAST = ("Whitfield", "Okafor", "Lindqvist", "Brennan", "Castellano", "Nakamura", "Abernathy", "Kowalczyk", "Delacroix",
        "Haddad", "Romero", "Sorensen", "Mwangi", "Petrov", "Quintero", "Fairbanks", "Iyer", "Moreau", "Holloway", "Varga")
COMPANIES = ("Corvel Logistics", "Brightwater Foods", "Halcyon Freight", "Tessaro Plastics", "Northgate Supply",
             "Alder & Finch", "Meridian Tooling", "Bluecrest Energy", "Oakmont Realty", "Quarry Lane Media")
TOPICS = ("the warehouse lease", "the spring catalogue", "the forklift maintenance contract", "the new packaging line",
          "the Denver trade show", "the freight rates for next year", "the office move", "the safety audit",
          "the payroll software", "the holiday shipping schedule")
WAREHOUSES = ("Reno", "Dayton", "Savannah", "Tacoma")


def write(folder: Path, Item) -> list:
    """Write the spreadsheet folder (fixed seed) and return its questions (``Item``: bench/suite.py's)."""
    import csv

    import openpyxl

    from bench.textpool import hotpot_records

    rng = random.Random(18)
    folder.mkdir(parents=True, exist_ok=True)
    items: list = []
    # sales workbook: one row per region, quarter, year, product
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Sales"
    sheet.append(["Region", "Quarter", "Year", "Product", "Units", "Sales (USD)"])
    rows = []
    for year in (2022, 2023):
        for q in ("Q1", "Q2", "Q3", "Q4"):
            for region in REGIONS:
                for product in PRODUCTS:
                    units = rng.randint(120, 990)
                    sales = units * rng.choice((37, 41, 53, 68))
                    sheet.append([region, q, year, product, units, sales])
                    rows.append((region, q, year, product, units, sales))
    book.save(folder / "regional_sales.xlsx")
    # budget workbook: the same region / quarter / year columns, other figures
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Budget"
    sheet.append(["Region", "Quarter", "Year", "Department", "Budget (USD)"])
    for year in (2022, 2023):
        for q in ("Q1", "Q2", "Q3", "Q4"):
            for region in REGIONS:
                for dept in ("Marketing", "Operations"):
                    sheet.append([region, q, year, dept, rng.randint(20, 90) * 1000])
    book.save(folder / "department_budget.xlsx")
    # inventory
    with open(folder / "inventory.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["SKU", "Product", "Warehouse", "On hand", "Reorder level"])
        inv = []
        for i, (product, wh) in enumerate((p, w_) for p in PRODUCTS for w_ in WAREHOUSES):
            row = (f"SKU-{4100 + i}", product, wh, rng.randint(10, 900), rng.randint(50, 200))
            w.writerow(row)
            inv.append(row)
    # contacts, and one meeting note per topic naming one of them
    people = []
    names = [(a, b) for a in FIRST for b in LAST]
    rng.shuffle(names)
    for i, (first, last) in enumerate(names[:40]):
        company = COMPANIES[i % len(COMPANIES)]
        email = f"{first.lower()}.{last.lower()}@{re.sub(r'[^a-z]', '', company.lower())}.com"
        phone = f"+1 555 {rng.randint(100, 999)} {rng.randint(1000, 9999)}"
        people.append((f"{first} {last}", company, rng.choice(("Buyer", "Account manager", "Director", "Engineer")),
                       email, phone, rng.choice(("Boston", "Austin", "Denver", "Chicago", "Seattle"))))
    with open(folder / "contacts.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["Name", "Company", "Role", "Email", "Phone", "City"])
        w.writerows(people)
    notes = folder / "notes"
    notes.mkdir(exist_ok=True)
    for i, topic in enumerate(TOPICS):
        person = people[3 * i]
        first = person[0].split()[0]
        (notes / f"meeting-{i + 1:02d}.md").write_text(
            f"# Meeting notes {i + 1}\n\nMet {person[0]} ({person[1]}) today about {topic}. {first} wants a written "
            f"proposal by the end of the month and will check the figures with their team. Next step: send the "
            f"draft and book a follow-up call.\n")
        items.append(Item(f"hop-{i}", f"What is the phone number of the person I met about {topic}?",
                          (f"notes/meeting-{i + 1:02d}.md", "contacts.csv"), (person[4],)))
    for i, rec in enumerate(hotpot_records()[:30]):
        for title, sents in rec["context"][:5]:
            safe = re.sub(r"[^A-Za-z0-9]+", "_", title)[:60]
            (notes / f"wiki-{i:03d}-{safe}.txt").write_text(f"{title}\n\n{''.join(sents)}\n")
    # questions: rows by their values, rows by a column name and a value
    for n, (region, q, year, product, units, sales) in enumerate(rng.sample(rows, 15)):
        items.append(Item(f"row-{n}", f"{region} region {q} {product} sales {year}", ("regional_sales.xlsx",),
                          (str(sales),)))
    for n, person in enumerate(rng.sample(people, 10)):
        col, value = rng.choice((("email", person[3]), ("phone", person[4])))
        items.append(Item(f"contact-{n}", f"{col} of {person[0]}", ("contacts.csv",), (value,)))
    for n, (sku, product, wh, on_hand, _) in enumerate(rng.sample(inv, 5)):
        items.append(Item(f"stock-{n}", f"How many {product} are on hand in the {wh} warehouse?", ("inventory.csv",),
                          (str(on_hand),)))
    return interleaved(items)


def interleaved(items: list) -> list:
    """The questions of each sort in turn (hop, row, contact, stock, hop, ...): ``--limit`` keeps all sorts."""
    sorts: dict[str, list[Item]] = {}
    for it in items:
        sorts.setdefault(it.qid.split("-")[0], []).append(it)
    out = []
    while any(sorts.values()):
        for group in sorts.values():
            if group:
                out.append(group.pop(0))
    return out
