// A tap on an entry of an open menu (the chapter list or the page contents, dialogs on
// phones and tablets) goes somewhere: close the menu so the reader sees where it went.
// The link scrolls to its section first; then the theme's "close" handler, added when
// the menu opened, focuses the button that opened it, which scrolls the page back to
// that button and shows its tooltip. A handler added now runs after the theme's: land
// the reader where a direct link would, and move focus there, which hides the tooltip
// and lets the keyboard carry on from the section.
function landOn(hash) {
  const id = decodeURIComponent(hash.slice(1));
  const target = id && document.getElementById(id);
  let heading;
  if (target) {
    target.scrollIntoView(); // honours the scroll padding under the sticky header, as a link does
    heading = target.querySelector(":scope > :is(h1, h2, h3, h4, h5, h6)") || target;
  } else {
    window.scrollTo(0, 0); // "#", the chapter list's entry for this page
    heading = document.querySelector(".bd-article h1");
  }
  if (!heading) {
    return;
  }
  if (!heading.hasAttribute("tabindex")) {
    heading.setAttribute("tabindex", "-1");
  }
  heading.focus({ preventScroll: true });
}

document.addEventListener("click", (event) => {
  const link = event.target.closest("dialog[open] a[href]");
  if (!link) {
    return;
  }
  const dialog = link.closest("dialog");
  const here = link.origin === window.location.origin && link.pathname === window.location.pathname;
  if (here) {
    dialog.addEventListener("close", () => landOn(link.hash), { once: true });
  }
  dialog.close();
});

// The chapter list opens (a dialog on phones and tablets) at the page being read, not at
// its top: the book's list is longer than a phone's screen, and the current page may be
// at its end. The theme opens the dialog with showModal(); its "open" attribute says when.
const chapterList = document.getElementById("pst-primary-sidebar-modal");
if (chapterList) {
  new MutationObserver(() => {
    const current = chapterList.open && [...chapterList.querySelectorAll("li.current > a.current")].pop();
    if (current) {
      current.scrollIntoView({ block: "center" });
    }
  }).observe(chapterList, { attributes: true, attributeFilter: ["open"] });
}

// The language switch keeps the reader's place: a section's anchor is the same label
// in every language (the parity check sees to it), so carry it over to the other
// language's page: the anchor in the address while its heading is on screen, else the
// section being read, the last whose heading has scrolled into the top third (none
// while the page has not been scrolled). The heading, not the section: a section holds
// its subsections, so it stays "on screen" while the reader is several of them further.
function placeOnThisPage() {
  const target = window.location.hash && document.getElementById(decodeURIComponent(window.location.hash.slice(1)));
  if (target) {
    const heading = target.matches("section") && target.querySelector(":scope > :is(h1, h2, h3, h4, h5, h6)");
    const { top, bottom } = (heading || target).getBoundingClientRect();
    if (bottom >= 0 && top <= window.innerHeight) {
      return window.location.hash;
    }
  }
  let current = "";
  if (window.scrollY < 1) {
    return current;
  }
  const headings = document.querySelectorAll(".bd-article section[id] > :is(h2, h3, h4, h5, h6)");
  for (const heading of headings) {
    if (heading.getBoundingClientRect().top > window.innerHeight / 3) {
      break;
    }
    current = "#" + heading.parentElement.id;
  }
  return current;
}

document.addEventListener("click", (event) => {
  const link = event.target.closest("a.book-language[hreflang]");
  if (link) {
    link.href = link.href.split("#")[0] + placeOnThisPage();
  }
});

// Upstream workaround: sphinx-copybutton's Chinese "copied" message ends in a half-width
// "!". Its message table and check icon are globals of copybutton.js, which has run by
// now (book.js is deferred); the tooltip reads the table on every copy. Listed in
// book_extensions/upstream.py, which notices when copybutton.js changes.
if (typeof messages !== "undefined" && messages["zh-CN"]) {
  const wrong = messages["zh-CN"].copy_success;
  messages["zh-CN"].copy_success = wrong.replace(/!$/, "！");
  if (typeof iconCheck !== "undefined") {
    iconCheck = iconCheck.replace(wrong, messages["zh-CN"].copy_success);
  }
}

// Exercises (book_extensions/site/exercises.py): the reader checks a prediction, then sees
// torch's output. The answer (a closed <details>, which is all a reader without JavaScript
// gets) stays hidden until a choice is checked. The choice is kept in this browser only
// (localStorage, by exercise id: the same exercise in the other language), and "Try again"
// forgets it. A radio's change does not reveal the answer: arrow keys change it while a
// keyboard reader moves through the choices, so the "Check" button commits.
const exerciseKey = (exercise) => "book-exercise:" + exercise.dataset.exercise;

function showExercise(exercise, choice) {
  const form = exercise.querySelector(".book-exercise-form");
  const answer = exercise.dataset.answer;
  const feedback = form.querySelector(".book-exercise-feedback");
  const details = exercise.querySelector(".book-exercise-answer");
  for (const input of form.querySelectorAll("input[type=radio]")) {
    const label = input.closest("label");
    input.checked = choice !== null && input.value === choice;
    label.classList.toggle("book-right", choice !== null && input.value === answer);
    label.classList.toggle("book-wrong", choice !== null && input.value === choice && choice !== answer);
  }
  // Once checked, the prediction stands until "Try again": choosing the right answer after
  // seeing it would turn "Not quite" into "Right", and keep that.
  for (const control of form.querySelectorAll("input[type=radio], .book-exercise-check")) {
    control.disabled = choice !== null;
  }
  // A checked exercise shows "Try again" in place of "Check", which would do nothing now.
  form.querySelector(".book-exercise-check").hidden = choice !== null;
  form.querySelector(".book-exercise-reset").hidden = choice === null;
  details.hidden = choice === null;
  details.open = choice !== null;
  if (choice === null) {
    feedback.textContent = "";
  } else {
    const said = choice === answer ? form.dataset.right : form.dataset.wrong;
    feedback.textContent = said.replace("{answer}", answer).replace("{choice}", choice);
  }
}

function storeChoice(exercise, choice) {
  try {
    if (choice === null) {
      window.localStorage.removeItem(exerciseKey(exercise));
    } else {
      window.localStorage.setItem(exerciseKey(exercise), choice);
    }
  } catch {
    // Storage refused (a private window, a full quota): the page still works, it only forgets.
  }
}

for (const exercise of document.querySelectorAll(".book-exercise[data-exercise]")) {
  const form = exercise.querySelector(".book-exercise-form");
  if (!form) {
    continue;
  }
  let stored = null;
  try {
    stored = window.localStorage.getItem(exerciseKey(exercise));
  } catch {
    stored = null;
  }
  const known = stored !== null && form.querySelector(`input[value="${CSS.escape(stored)}"]`);
  showExercise(exercise, known ? stored : null);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const checked = form.querySelector("input[type=radio]:checked");
    if (!checked) {
      form.querySelector(".book-exercise-feedback").textContent = form.dataset.none;
      return;
    }
    storeChoice(exercise, checked.value);
    showExercise(exercise, checked.value);
    // The control that had the focus is disabled or hidden now: the keyboard goes on from "Try
    // again", right after the feedback that the live region reads out.
    form.querySelector(".book-exercise-reset").focus();
  });
  form.querySelector(".book-exercise-reset").addEventListener("click", () => {
    storeChoice(exercise, null);
    showExercise(exercise, null);
    form.querySelector("input[type=radio]").focus();
  });
}
