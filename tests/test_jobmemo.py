"""A job asks GitHub a question about something that does not change within seconds once."""

from __future__ import annotations

import pytest

from bot.runtime.jobmemo import job_memo, remembered


class Asker:
    def __init__(self, *answers: object) -> None:
        self.answers = list(answers)
        self.asked = 0

    async def __call__(self) -> object:
        self.asked += 1
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


async def test_inside_a_job_a_question_is_asked_once_none_included() -> None:
    ask = Asker(None, "later")
    with job_memo():
        assert await remembered("release v1", ask) is None
        assert await remembered("release v1", ask) is None
    assert ask.asked == 1


async def test_outside_a_job_and_in_the_next_one_it_is_asked_again() -> None:
    ask = Asker("a", "b", "c")
    assert await remembered("k", ask) == "a"
    with job_memo():
        assert await remembered("k", ask) == "b"
    with job_memo():
        assert await remembered("k", ask) == "c"


async def test_a_question_that_failed_is_asked_again() -> None:
    ask = Asker(OSError("reset"), "answer")
    with job_memo():
        with pytest.raises(OSError):
            await remembered("k", ask)
        assert await remembered("k", ask) == "answer"
    assert ask.asked == 2
