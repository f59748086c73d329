"""The corpus's class tasks (written for this project)."""

from __future__ import annotations

from bench.code_tasks.task import Task, task

CLASS_TASKS: tuple[Task, ...] = (
    task(
        "MinStack",
        """Write a class `MinStack` with `push(x)`, `pop()` (returns the top, or None when
        empty), `min()` (the smallest value held, None when empty) and `len()` support.""",
        """
        class MinStack:
            def __init__(self):
                self._items, self._mins = [], []

            def push(self, x):
                self._items.append(x)
                self._mins.append(x if not self._mins else min(x, self._mins[-1]))

            def pop(self):
                if not self._items:
                    return None
                self._mins.pop()
                return self._items.pop()

            def min(self):
                return self._mins[-1] if self._mins else None

            def __len__(self):
                return len(self._items)
        """,
        """
        class MinStack:
            def __init__(self):
                self._items, self._min = [], None

            def push(self, x):
                self._items.append(x)
                self._min = x if self._min is None else min(x, self._min)

            def pop(self):
                return self._items.pop() if self._items else None

            def min(self):
                return self._min

            def __len__(self):
                return len(self._items)
        """,
        "s = MinStack()\nassert s.pop() is None and s.min() is None",
        "s = MinStack()\ns.push(3)\ns.push(1)\nassert s.min() == 1 and len(s) == 2",
        "s = MinStack()\ns.push(2)\ns.push(1)\nassert s.pop() == 1\nassert s.min() == 2",
        "s = MinStack()\nfor x in (5, 4, 6):\n    s.push(x)\nassert s.pop() == 6 and s.min() == 4",
        "s = MinStack()\ns.push(1)\ns.pop()\nassert s.min() is None and len(s) == 0",
    ),
    task(
        "Account",
        """Write a class `Account(balance=0)` with `deposit(amount)` and `withdraw(amount)`
        (each raises ValueError for an amount that is not positive; `withdraw` raises
        ValueError when the balance is too low and then changes nothing) and a `balance`
        attribute.""",
        """
        class Account:
            def __init__(self, balance=0):
                self.balance = balance

            def deposit(self, amount):
                if amount <= 0:
                    raise ValueError("amount must be positive")
                self.balance += amount

            def withdraw(self, amount):
                if amount <= 0 or amount > self.balance:
                    raise ValueError("invalid amount")
                self.balance -= amount
        """,
        """
        class Account:
            def __init__(self, balance=0):
                self.balance = balance

            def deposit(self, amount):
                if amount <= 0:
                    raise ValueError("amount must be positive")
                self.balance += amount

            def withdraw(self, amount):
                self.balance -= amount
        """,
        "a = Account()\na.deposit(10)\nassert a.balance == 10",
        "a = Account(5)\na.withdraw(3)\nassert a.balance == 2",
        "a = Account()\nwith pytest.raises(ValueError):\n    a.deposit(0)",
        "a = Account(1)\nwith pytest.raises(ValueError):\n    a.withdraw(2)\nassert a.balance == 1",
        "a = Account(4)\nwith pytest.raises(ValueError):\n    a.withdraw(-1)",
        "a = Account(7)\na.withdraw(7)\nassert a.balance == 0",
    ),
)
