// The language switch keeps the reader's place: a section's anchor is the same
// label in every language, so carry it over to the other language's page.
document.addEventListener("click", (event) => {
  const link = event.target.closest(".book-language-switch a");
  if (link && window.location.hash) {
    link.href = link.href.split("#")[0] + window.location.hash;
  }
});
