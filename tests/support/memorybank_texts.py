"""Sample texts the Memory Bank tests share."""

PARTS = [
    "Memory is the faculty of the mind by which data is encoded, stored, and retrieved when needed. ",
    "記憶とは、情報を符号化し、保存し、必要なときに取り出す心の働きである。",
    "La mémoire est la faculté de conserver et de rappeler des états de conscience passés!\n",
    "Память — способность сохранять информацию? ",
    "الذاكرة هي قدرة العقل على تخزين المعلومات. ",
    "기억은 정보를 저장하는 능력이다.\n\n",
]
MULTILINGUAL = "".join(PARTS[i % len(PARTS)] for i in range(120))
