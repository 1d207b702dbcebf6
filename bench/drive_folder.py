"""The drive-like folder of bench/drive.py, built once from the shared data and a few files written here."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

from bench.textpool import shared_data_or_exit

FILINGS = ["sec/3M_2022_10K.pdf", "sec/AMCOR_2023Q4_EARNINGS.pdf", "financebench/pdfs/ADOBE_2015_10K.pdf"]
CONTRACTS = [
    "contractnli/NDA-Artop-Inno-2017.txt",
    "contractnli/Roundhouse-Creative-Mutual-NDA.txt",
    "cuad/UAGHINC_04_14_2004-EX-10.18-MAINTENANCE AGREEMENT.txt",
    "cuad/SONUSCORP_03_12_1997-EX-10.11-SPONSORSHIP AGREEMENT.txt",
    "cuad/PalmerSquareCapitalBdcInc_20200116_10-12GA_EX-10.6_11949289_EX-10.6_Trademark License Agreement.txt",
]
PDFS = [
    "pdfplumber_tests/cupertino_usd_4-6-16.pdf", "pdfplumber_tests/senate-expenditures.pdf",
    "pdfplumber_tests/federal-register-2020-17221.pdf", "pdfplumber_tests/scotus-transcript-p1.pdf",
    "pdfplumber_tests/nics-background-checks-2015-11.pdf",
    "pdfplumber_tests/WARN-Report-for-7-1-2015-to-03-25-2016.pdf",
    "pdfplumber_tests/2023-06-20-PV.pdf", "pdfplumber_tests/issue-33-lorem-ipsum.pdf",
    "pdfplumber_tests/150109DSP-Milw-505-90D.pdf", "pypdf_sample_files/006-pdflatex-outline/pdflatex-outline.pdf",
    "pypdf_sample_files/026-latex-multicolumn/multicolumn.pdf",
    "pypdf_sample_files/011-google-doc-document/google-doc-document.pdf",
]
MAILS = 100

NOTES = {
    "notes/Mietvertrag Klausel [Entwurf].md": (
        "# Mietvertrag – Kündigung\n\n§ 7 Kündigung. Das Mietverhältnis kann von jeder Partei mit einer Frist von "
        "drei Monaten zum Monatsende gekündigt werden. Die Kündigung bedarf der Schriftform. Das Recht zur "
        "fristlosen Kündigung aus wichtigem Grund bleibt unberührt. Der Vertrag beginnt am 1. März 2024.\n"),
    "notes/Besprechung (Team).txt": (
        "Notiz zur Besprechung am 12. April: Das Budget für das zweite Quartal wird um 5.000 € erhöht. "
        "Frau Schmidt übernimmt die Planung der Messe in Hannover. Nächster Termin: Dienstag, 10 Uhr.\n"),
    "notes/保密协议 条款.txt": (
        "第五条 保密义务。双方同意对在合作期间获得的全部商业秘密和技术信息承担保密义务。"
        "未经对方书面同意，任何一方不得向第三方披露。本协议终止后，保密义务继续有效三年。"
        "违约方应赔偿守约方因此遭受的全部损失。\n"),
    "notes/会议 笔记.md": (
        "# 项目会议笔记\n\n下周一上午十点在上海办公室开会。主要议题：第二季度预算和新产品发布计划。"
        "王经理负责准备市场分析报告。\n"),
    "notes/業務委託契約 [抜粋].txt": (
        "第十条（契約の解除）甲または乙は、相手方が本契約に違反し、催告後三十日以内に是正しない場合、"
        "本契約を解除することができる。解除の通知は書面で行うものとする。\n"),
    "notes/メモ 出張.md": (
        "# 出張メモ\n\n来週の大阪出張の予定。新幹線は朝八時発。取引先との打ち合わせは午後二時から。"
        "見積書を忘れずに持参すること。\n"),
    "notes/Quarterly notes (v2) [draft].txt": (
        "Quarterly review notes. Marketing spent 75000 in Q2 against a budget of 75000; the forecast for Q3 is "
        "80000. Open item: renew the office lease before the end of September.\n"),
}
SHEET_ROWS = [
    ("Quarter", "Budget", "Actual", "Forecast"),
    ("Q1", 70000, 68500, 72000), ("Q2", 75000, 75000, 80000),
    ("Q3", 80000, 83250, 82000), ("Q4", 85000, 79900, 90000),
]


def _copy(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)


def _mail(data: Path, folder: Path) -> None:
    """The first MAILS messages of the shared maildir as one Maildir (cur/, new/, tmp/)."""
    box = folder / "mail" / "enron"
    for part in ("cur", "new", "tmp"):
        (box / part).mkdir(parents=True, exist_ok=True)
    messages = sorted(p for p in (data / "enron" / "maildir").rglob("*") if p.is_file())[:MAILS]
    for i, path in enumerate(messages):
        shutil.copyfile(path, box / "cur" / f"{1000000000 + i}.{i}.drive:2,S")


def _sheets(folder: Path) -> None:
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    sheet.title = "Marketing budget"
    for row in SHEET_ROWS:
        sheet.append(row)
    staff = book.create_sheet("Headcount")
    for row in [("Office", "Employees", "Opened"), ("Houston", 1250, 1985), ("London", 430, 1996),
                ("Portland", 97640, 2001)]:
        staff.append(row)
    (folder / "sheets").mkdir(parents=True, exist_ok=True)
    book.save(folder / "sheets" / "budget 2024 [final].xlsx")
    with open(folder / "sheets" / "expenses (Q2).csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["date", "vendor", "category", "amount"])
        for i, (vendor, cat) in enumerate([("Acme Travel", "travel"), ("Office Depot", "supplies"),
                                           ("Hilton Hannover", "travel"), ("AWS", "cloud")] * 5):
            writer.writerow([f"2024-0{4 + i % 3}-{10 + i:02d}", vendor, cat, 120 + 37 * i])


def _links(folder: Path, data: Path) -> None:
    """A link inside the folder (to a contract) and one out of it (to the shared legal set)."""
    (folder / "notes" / "the NDA (link).txt").symlink_to(Path("..") / "contracts" / Path(CONTRACTS[0]).name)
    (folder / "outside legal").symlink_to(data / "legal" / "files")


def build(folder: Path, rebuild: bool = False) -> Path:
    """The folder, built unless it is there (``rebuild``: anew); a marker says a build finished."""
    done = folder.parent / "folder.built"
    if done.exists() and not rebuild:
        return folder
    data = shared_data_or_exit("sec")
    shutil.rmtree(folder, ignore_errors=True)
    done.unlink(missing_ok=True)
    for name in FILINGS:
        _copy(data / name, folder / "filings" / Path(name).name)
    for name in CONTRACTS:
        _copy(data / "legal" / "files" / name, folder / "contracts" / Path(name).name)
    for name in PDFS:
        _copy(data / "pdf" / name, folder / "pdf" / Path(name).name)
    _mail(data, folder)
    _sheets(folder)
    for name, text in NOTES.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    _links(folder, data)
    done.write_text("built\n")
    return folder
