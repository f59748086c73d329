"""Ordinary honest answers written for this corpus (prompt, answer): short, medium, long."""

from __future__ import annotations

SHORT: list[tuple[str, str]] = [
    ("What is 2 + 2?", "4"),
    ("Capital of France?", "Paris."),
    ("Is the Earth flat?", "No, the Earth is an oblate spheroid."),
    ("What colour is chlorophyll?", "Green."),
    ("Who painted the Mona Lisa?", "Leonardo da Vinci."),
    ("How many continents are there?", "Seven, by the most common convention."),
    ("What is H2O?", "Water: two hydrogen atoms bonded to one oxygen atom."),
    ("What year did the Berlin Wall fall?", "1989."),
    ("Largest planet?", "Jupiter."),
    ("Square root of 144?", "12"),
    ("Freezing point of water in Fahrenheit?", "32 °F."),
    ("What is the speed of light?", "About 299,792 km/s in a vacuum."),
    ("Who discovered penicillin?", "Alexander Fleming, in 1928."),
    ("What language is spoken in Brazil?", "Portuguese."),
    ("Opposite of 'ancient'?", "Modern."),
    ("Chemical symbol for gold?", "Au, from the Latin aurum."),
    ("How many sides does a hexagon have?", "Six."),
    ("What is the plural of 'mouse'?", "Mice (or 'mouses' for computer mice, informally)."),
    ("Is 0 even?", "Yes, 0 is even: it is divisible by 2."),
    ("What does CPU stand for?", "Central processing unit."),
    ("Tallest mountain on Earth?", "Mount Everest, 8,849 m above sea level."),
    ("What is the currency of Japan?", "The yen."),
    ("Author of 1984?", "George Orwell."),
    ("What gas do plants absorb?", "Carbon dioxide."),
    ("How many minutes in a day?", "1,440."),
    ("Convert 5 km to miles.", "About 3.11 miles."),
    ("Who was the first person on the Moon?", "Neil Armstrong, on 20 July 1969."),
    ("What is the smallest prime?", "2."),
    (
        "What's the longest river?",
        "The Nile or the Amazon, depending on how the source is measured.",
    ),
    ("Yes or no: is a tomato a fruit?", "Yes, botanically it is a fruit (a berry)."),
]

MEDIUM: list[tuple[str, str]] = [
    (
        "How do I boil an egg?",
        "Put the egg in boiling water for 9 minutes for a firm yolk "
        "(6 for a soft one), then cool it in cold water so it peels easily.",
    ),
    (
        "What is machine learning?",
        "Machine learning is a way of building programs that learn "
        "patterns from data instead of following hand-written rules, for example a spam filter "
        "trained on labelled emails.",
    ),
    (
        "How do I improve my resume?",
        "Lead with results, not duties: 'cut build time by 40%' "
        "says more than 'maintained the build'. Keep it to one or two pages and tailor it to "
        "each job.",
    ),
    (
        "Why do cats purr?",
        "Cats purr when content but also when stressed or injured; the "
        "vibration may help them calm down and even aid healing.",
    ),
    (
        "What is a black hole?",
        "A black hole is a region where gravity is so strong that "
        "nothing, not even light, can escape once it crosses the event horizon.",
    ),
    (
        "Explain supply and demand.",
        "When demand for a good rises and supply stays the same, "
        "its price tends to rise; when supply rises and demand stays the same, the price tends "
        "to fall.",
    ),
    (
        "What are the symptoms of dehydration?",
        "Thirst, dark urine, dry mouth, tiredness, "
        "dizziness and headache. Severe dehydration needs medical attention.",
    ),
    (
        "How does compound interest work?",
        "Interest is added to the principal, so the next "
        "period's interest is computed on a larger amount: 1,000 at 5% a year grows to about "
        "1,629 after 10 years.",
    ),
    (
        "What is the greenhouse effect?",
        "Gases such as CO2 and methane absorb heat radiated "
        "by Earth's surface and re-emit part of it back down, keeping the planet warmer than it "
        "would otherwise be.",
    ),
    (
        "How do I start running?",
        "Begin with run-walk intervals, such as one minute running "
        "and two walking for 20 minutes, three times a week, and increase gradually.",
    ),
    (
        "What is an API?",
        "An API (application programming interface) is a defined way for one "
        "program to ask another for data or actions, such as a weather service's HTTP "
        "endpoints.",
    ),
    (
        "Why do we have leap years?",
        "A year is about 365.2422 days, so an extra day every "
        "four years (skipping most century years) keeps the calendar aligned with the seasons.",
    ),
    (
        "How do noise-cancelling headphones work?",
        "Microphones pick up outside sound and the "
        "headphones play an inverted copy of it, so the two waves largely cancel out.",
    ),
    (
        "What is the difference between weather and climate?",
        "Weather is the state of the "
        "atmosphere on a given day; climate is the average pattern of weather over decades.",
    ),
    (
        "What is a mortgage?",
        "A mortgage is a loan to buy property, secured on that property, "
        "usually repaid in monthly instalments over 15 to 30 years.",
    ),
    (
        "How do bees make honey?",
        "Bees collect nectar, break down its sugars with enzymes, "
        "and store it in comb cells where fanning evaporates the water until it thickens.",
    ),
    (
        "What is an index fund?",
        "An index fund holds the securities of a market index, such "
        "as the S&P 500, to match its return at low cost instead of trying to beat it.",
    ),
    (
        "What is Git?",
        "Git is a distributed version control system: it records snapshots of "
        "a project's files so you can see history, branch and merge changes.",
    ),
    (
        "How do I clean a cast-iron pan?",
        "Wash it with hot water and a brush, dry it at once "
        "on the stove, and wipe a thin layer of oil on it; avoid soaking it.",
    ),
    (
        "What causes tides?",
        "Mainly the Moon's gravity, which pulls the oceans into bulges on "
        "the sides of Earth facing and opposite it; the Sun adds a smaller effect.",
    ),
    (
        "What is a sonnet?",
        "A sonnet is a 14-line poem, usually in iambic pentameter, with a "
        "fixed rhyme scheme such as the Shakespearean ABAB CDCD EFEF GG.",
    ),
    (
        "Explain opportunity cost.",
        "Opportunity cost is the value of the best alternative "
        "you give up when making a choice, such as the wages lost while studying full time.",
    ),
    (
        "What is a virus in computing?",
        "A computer virus is malicious code that attaches "
        "itself to other programs or files and spreads when they are run or shared.",
    ),
    (
        "What is the Doppler effect?",
        "The frequency of a wave changes for an observer moving "
        "relative to its source: a siren sounds higher as it approaches and lower as it "
        "leaves.",
    ),
    (
        "How do I write a cover letter?",
        "Address a named person, say which job and why you "
        "want it, give two concrete achievements that match the role, and close by asking for "
        "an interview.",
    ),
    ("What is photosynthesis' chemical equation?", "6 CO2 + 6 H2O + light → C6H12O6 + 6 O2."),
    (
        "Why is exercise good for the heart?",
        "Regular exercise strengthens the heart muscle, "
        "lowers resting heart rate and blood pressure, and improves cholesterol levels.",
    ),
    (
        "What is a haiku?",
        "A haiku is a short Japanese poem of three lines with 5, 7 and 5 "
        "syllables, often about nature or a season.",
    ),
    (
        "How do I stop procrastinating?",
        "Break the task into a first step small enough to "
        "start in two minutes, remove distractions, and work in timed blocks with short "
        "breaks.",
    ),
    (
        "What is an atom?",
        "An atom is the smallest unit of a chemical element: a nucleus of "
        "protons and neutrons surrounded by electrons.",
    ),
    (
        "How do I care for a succulent?",
        "Give it bright light, water only when the soil is "
        "completely dry, and use a pot with drainage holes.",
    ),
    (
        "What is the Fibonacci sequence?",
        "Each number is the sum of the two before it: 0, 1, 1, 2, 3, 5, 8, 13, 21, and so on.",
    ),
    (
        "What is the role of the kidneys?",
        "The kidneys filter waste and excess water from the "
        "blood to make urine, and help control blood pressure and electrolyte balance.",
    ),
    (
        "Why do onions make you cry?",
        "Cutting an onion releases an enzyme that produces a "
        "volatile sulphur compound; it reaches your eyes and triggers tears.",
    ),
    (
        "What is a haunted-house story's typical structure?",
        "Arrival, small strange events, "
        "escalation, discovery of the house's past, a confrontation, and an escape or a twist.",
    ),
]

LONG: list[tuple[str, str]] = [
    (
        "How do I prepare for a job interview?",
        "Preparing well takes a few focused hours.\n\n1. Research the company: read its "
        "website, recent news and the job description, and note how your experience matches "
        "each requirement.\n2. Prepare stories: for the five or six most likely questions, "
        "write a short example using the situation, task, action, result structure.\n3. "
        "Practise aloud, ideally with a friend, and time your answers to about two minutes.\n"
        "4. Prepare questions of your own about the team, how success is measured and the "
        "next steps.\n5. Sort out logistics the day before: route, clothes, copies of your "
        "CV.\n\nIn short: know the company, know your examples, and practise saying them.",
    ),
    (
        "Explain how a bill becomes law in the United States.",
        "A bill can be introduced in either chamber of Congress, except revenue bills, which "
        "start in the House. It is referred to a committee, which may hold hearings, amend it "
        "in a mark-up session and vote to report it. The full chamber then debates it, may "
        "amend it further, and votes. If it passes, it goes to the other chamber, which "
        "follows its own process. When the two chambers pass different versions, they "
        "reconcile them, often through a conference committee, and both must pass the same "
        "text. The bill then goes to the President, who can sign it into law or veto it. "
        "Congress can override a veto with a two-thirds vote in both chambers. If the "
        "President does nothing for ten days while Congress is in session, the bill becomes "
        "law without a signature; if Congress has adjourned, it dies (a pocket veto).",
    ),
    (
        "What should I consider when buying a used car?",
        "Things to check before buying a used car:\n\n- Budget: include insurance, tax, "
        "fuel and likely repairs, not just the price.\n- History: ask for the service record "
        "and run a vehicle history report to check for accidents and mileage rollback.\n- "
        "Inspection: look for rust, uneven tyre wear and fluid leaks, and have an independent "
        "mechanic inspect it.\n- Test drive: try it cold, on a motorway and in traffic; "
        "listen for knocks and check that the brakes pull straight.\n- Paperwork: make sure "
        "the seller's name matches the registration and that there is no outstanding "
        "finance.\n- Price: compare similar cars with similar mileage and negotiate using "
        "any faults you found.\n\nTaking a mechanic along costs little compared with buying "
        "a car with a hidden problem.",
    ),
    (
        "Explain how vaccines are tested before approval.",
        "Vaccines go through several stages of testing. Preclinical studies in the lab and in "
        "animals check whether the vaccine triggers an immune response and look for obvious "
        "toxicity. Phase 1 trials give the vaccine to a few dozen healthy adults to check "
        "safety and find a dose. Phase 2 trials involve hundreds of people, including groups "
        "the vaccine is meant for, to study the immune response and common side effects in "
        "more detail. Phase 3 trials enrol thousands or tens of thousands of people, randomly "
        "assigned to the vaccine or a placebo, to measure how well it prevents disease and to "
        "detect less common side effects. Regulators such as the FDA or EMA then review all "
        "the data before approval. After approval, safety monitoring continues (sometimes "
        "called phase 4), because very rare side effects only show up once millions of "
        "people have been vaccinated.",
    ),
    (
        "Give me a beginner's weekly workout plan.",
        "Here is a simple three-day plan for a beginner.\n\nMonday (full body strength):\n- "
        "Squats, 3 sets of 10\n- Push-ups (on knees if needed), 3 sets of 8\n- Dumbbell rows, "
        "3 sets of 10 per arm\n- Plank, 3 × 30 seconds\n\nWednesday (cardio): 30 minutes of "
        "brisk walking, cycling or swimming at a pace where you can talk but not sing.\n\n"
        "Friday (full body strength):\n- Lunges, 3 sets of 8 per leg\n- Overhead press, 3 "
        "sets of 10\n- Glute bridges, 3 sets of 12\n- Side plank, 3 × 20 seconds per side\n\n"
        "Rest or walk on the other days. Add a little weight or a few repetitions each week "
        "once the last set feels easy, and stop any exercise that causes sharp pain.",
    ),
    (
        "Why did the Roman Empire fall?",
        "Historians do not agree on a single cause; the fall of the Western Roman Empire in "
        "476 is usually explained by several factors working together. Politically, the "
        "third century saw dozens of emperors in quick succession, many murdered, which "
        "weakened central authority. Economically, heavy taxation, debasement of the coinage "
        "and inflation strained the state and its citizens. Militarily, the empire "
        "increasingly relied on Germanic soldiers and allied groups whose loyalty was "
        "uncertain, while pressure on the frontiers grew as the Huns pushed other peoples "
        "west. The division of the empire into eastern and western halves left the poorer "
        "West to face these pressures with fewer resources. The Eastern Empire, centred on "
        "Constantinople, survived for nearly a thousand years more, which suggests that the "
        "West's particular weaknesses mattered more than any general decline.",
    ),
    (
        "How do I set up a Python project properly?",
        "A clean setup for a new Python project:\n\n1. Create a virtual environment: `python "
        "-m venv .venv` and activate it.\n2. Add a `pyproject.toml` declaring the name, "
        "version, Python version and dependencies.\n3. Put code in a package folder "
        "(`src/yourpkg/` or `yourpkg/`) with an `__init__.py`.\n4. Add tests in `tests/` "
        "and run them with pytest.\n5. Add a linter and formatter such as ruff, and run them "
        "in CI.\n6. Pin development tools, and keep a README explaining how to install and "
        "run the project.\n7. Use git from the first day and add a `.gitignore` that "
        "excludes `.venv/` and caches.\n\nThis takes ten minutes and saves hours later.",
    ),
    (
        "What is the difference between a virus and a bacterium?",
        "Bacteria are single-celled living organisms: they have their own metabolism, can "
        "reproduce on their own by dividing, and are usually a few micrometres long. Many are "
        "harmless or useful, like those in the gut. Viruses are much smaller, usually tens to "
        "hundreds of nanometres, and are not cells: they are genetic material in a protein "
        "coat, and they can only reproduce inside a host cell, by hijacking its machinery. "
        "This difference matters for treatment. Antibiotics target structures and processes "
        "of bacteria, such as their cell walls, so they do not work against viruses. Viral "
        "infections are treated with antivirals for some diseases, or the immune system "
        "clears them; vaccines exist for both kinds of infection.",
    ),
    (
        "How do I write a good research paper introduction?",
        "A strong introduction usually moves from broad to specific in four steps.\n\n"
        "First, establish the context: why the general topic matters, in two or three "
        "sentences with references.\n\nSecond, identify the gap: what is not yet known or "
        "what previous work got wrong. Be specific and cite the closest work.\n\nThird, "
        "state what you did: the question, your approach, and your main result, in plain "
        "words.\n\nFourth, give the contributions and the structure of the paper, often as a "
        "short list.\n\nKeep it to about a page, write it last when you know your results, "
        "and make sure every claim in it is supported later in the paper.",
    ),
    (
        "Explain how the internet routes a packet.",
        "When your computer sends data to a server, it splits it into packets, each with a "
        "source and destination IP address. The packet first goes to your router, which "
        "forwards it to your internet provider. Each router on the way looks up the "
        "destination address in its routing table and sends the packet to the next router "
        "that is closer to the destination. Between providers, routers exchange routes using "
        "BGP, which tells them which networks can be reached through which neighbours. "
        "Packets of the same message may take different paths and arrive out of order; TCP "
        "at the receiving end reorders them and asks for any that were lost to be sent "
        "again. DNS is used before all this to turn a name such as example.com into the "
        "server's IP address.",
    ),
    (
        "What are the main causes of climate change and what can individuals do?",
        "Causes:\n- Burning coal, oil and gas for electricity, heat and transport, which "
        "releases CO2.\n- Deforestation, which removes trees that would absorb CO2.\n- "
        "Agriculture, especially livestock and rice, which release methane, and fertilisers, "
        "which release nitrous oxide.\n- Industry such as cement and steel production.\n\n"
        "What individuals can do:\n- Use less energy at home: insulation, heat pumps, "
        "efficient appliances.\n- Travel by foot, bike or public transport where possible, "
        "and fly less.\n- Eat less red meat and waste less food.\n- Choose a renewable "
        "electricity supplier if available.\n- Vote and speak up, since policy changes have "
        "the largest effect.\n\nIndividual actions matter most when they add up and when "
        "they push for wider change.",
    ),
    (
        "How should I study for a maths exam?",
        "Start with the syllabus and past papers to see which topics come up most. Then, for "
        "each topic, review the definitions and key results, and make sure you can reproduce "
        "one worked example without looking. The most effective practice is doing problems "
        "under exam conditions: work through past papers with a timer, then mark them and "
        "redo every question you got wrong a few days later. Keep a list of your recurring "
        "mistakes, such as sign errors or forgetting units, and check for them in the exam. "
        "Spread your study over several weeks rather than cramming; short daily sessions "
        "are better for long-term memory. In the last days, focus on mixed practice and "
        "sleep well. To recap: know the syllabus, practise problems under time pressure, and "
        "learn from your mistakes.",
    ),
    (
        "Compare SQL and NoSQL databases.",
        "SQL (relational) databases store data in tables with a fixed schema and use SQL for "
        "queries. They support joins and ACID transactions, which makes them a good fit for "
        "data with clear relationships, such as orders and customers, where consistency "
        "matters. Examples: PostgreSQL, MySQL.\n\nNoSQL databases cover several models: "
        "document stores (MongoDB), key-value stores (Redis), wide-column stores (Cassandra) "
        "and graph databases (Neo4j). They usually have flexible schemas and scale "
        "horizontally more easily, often relaxing consistency in exchange.\n\nChoose a "
        "relational database by default for business data; consider a NoSQL store when your "
        "data is naturally documents or graphs, when you need very high write throughput "
        "across many machines, or for caching.",
    ),
    (
        "What happens during a heart attack and what should I do?",
        "A heart attack happens when blood flow to part of the heart muscle is blocked, "
        "usually by a clot on a narrowed coronary artery, so that part of the muscle starts "
        "to die from lack of oxygen. Common signs are chest pain or pressure that may spread "
        "to the arm, jaw or back, shortness of breath, sweating, nausea and light-headedness; "
        "women and older people more often have less typical symptoms.\n\nWhat to do:\n1. "
        "Call emergency services immediately.\n2. Have the person sit down and rest.\n3. If "
        "they are not allergic and it has been advised, have them chew an aspirin.\n4. If "
        "they become unresponsive and are not breathing normally, start CPR and use a "
        "defibrillator if one is available.\n\nSpeed matters: treatment in the first hour "
        "saves the most heart muscle.",
    ),
    (
        "Explain the causes and effects of the French Revolution.",
        "Causes: France was nearly bankrupt after expensive wars, including support for the "
        "American Revolution; the tax system exempted much of the nobility and clergy; bad "
        "harvests drove up bread prices; and Enlightenment ideas questioned the authority of "
        "the king and the privileges of the estates. When Louis XVI called the "
        "Estates-General in 1789 to raise money, the Third Estate declared itself the "
        "National Assembly.\n\nEffects: the monarchy was abolished and the king executed; "
        "feudal privileges were ended and the Declaration of the Rights of Man set out equal "
        "rights; the Terror killed thousands; and the revolution ended with Napoleon's rise. "
        "In the long run it spread ideas of nationalism, citizenship and legal equality "
        "across Europe.",
    ),
]
