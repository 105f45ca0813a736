// Upstream workaround: the site menu and page contents buttons. pydata-sphinx-theme 0.20
// (and sphinx-book-theme 1.4, for collapsing the side bar on wide screens) bind their
// behaviour to the FIRST .primary-toggle / .secondary-toggle of the page, a button of
// the hidden top navbar, so the visible ones in the article header do nothing
// (pydata-sphinx-theme#2451, sphinx-book-theme#988). The theme's handlers stop the
// clicks they handle; a toggle's click that reaches the document was left unhandled,
// so hand it to the button the theme did bind. Once upstream binds every button, this
// never runs; remove it then.
document.addEventListener("click", (event) => {
  for (const kind of [".primary-toggle", ".secondary-toggle"]) {
    const clicked = event.target.closest(kind);
    const bound = document.querySelector(kind);
    if (clicked && bound && clicked !== bound) {
      event.preventDefault();
      bound.click();
    }
  }
});

// A tap on an entry of an open menu (the chapter list or the page contents, dialogs on
// phones and tablets) goes somewhere: close the menu so the reader sees where it went.
document.addEventListener("click", (event) => {
  const link = event.target.closest("dialog[open] a[href]");
  if (link) {
    link.closest("dialog").close();
  }
});

// The language switch keeps the reader's place: a section's anchor is the same label
// in every language (the parity check sees to it), so carry it over to the other
// language's page: the anchor in the address while its target is on screen, else the
// section being read, the last whose heading has scrolled into the top third (none
// while the page has not been scrolled).
function placeOnThisPage() {
  const target = window.location.hash && document.getElementById(decodeURIComponent(window.location.hash.slice(1)));
  if (target) {
    const { top, bottom } = target.getBoundingClientRect();
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
